"""The reference declaring products of the push_cache applicability table, some of them refusing every push.

``*_refusing`` backends refuse every push_cache call after the smoke check's (the first cluster they open):
they stand for a backend that does not work on the product it declares.
"""

from __future__ import annotations

from typing import Any

from reference_impl.backend import ReferenceBackend
from reference_impl.cache_manager import CacheManager
from reference_impl.status import LLMException, LLMStatusCode


class _Refusing(CacheManager):
    refuse = False

    def push_cache(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        if self.refuse:
            raise LLMException("push_cache does not work on this product", status_code=LLMStatusCode.LLM_FAILED)
        super().push_cache(*args, **kwargs)


class OnProduct(ReferenceBackend):
    def __init__(self, product: str | None, *, refusing: bool = False, **kwargs: Any) -> None:
        super().__init__(cache_manager_cls=_Refusing if refusing else CacheManager, **kwargs)
        self.product, self.refusing, self.opened = product, refusing, 0

    def capabilities(self) -> dict[str, Any]:
        caps = {k: v for k, v in super().capabilities().items() if k != "product"}
        return caps if self.product is None else {**caps, "product": self.product}

    def open_cluster(self, node_specs: Any) -> Any:
        cluster = super().open_cluster(node_specs)
        self.opened += 1
        if self.refusing and self.opened > 1:
            for node in cluster.nodes.values():
                node.cache_manager.refuse = True
        return cluster


supported_refusing = OnProduct("Atlas 800I A2 inference server", refusing=True, name="on-800i-a2-refusing")
undeclared_refusing = OnProduct(None, refusing=True, name="no-product-refusing")
english_only_refusing = OnProduct("Atlas 300I A2 inference card", refusing=True, name="on-300i-a2-refusing")
family_refusing = OnProduct("Atlas A2 training products", refusing=True, name="on-a2-family-refusing")
supported = OnProduct("Atlas A3 inference products", name="on-a3")
unsupported = OnProduct("Atlas training products", name="on-atlas-training")
