"""The reference, declaring a product the push_cache documentation marks unsupported."""

from __future__ import annotations

from reference_impl.backend import ReferenceBackend


class OnTrainingCard(ReferenceBackend):
    def capabilities(self):  # type: ignore[no-untyped-def]
        return {**super().capabilities(), "product": "Atlas training products"}


backend = OnTrainingCard(name="on-atlas-training")
