"""The 8.3.RC1.alpha002 page contradicts itself (its prototype names the ranges, its table takes them and
tensor_num_per_layer through **kwargs): with ``kwargs_may_be_named`` either reading conforms, and what both
readings share is still checked."""

from __future__ import annotations

import inspect

from conformance_tests.judging.signatures import signature_problems
from conformance_tests.spec import load_spec

ENTRY = load_spec().signature_for("8.3.RC1.alpha002")


def _problems(fn, lenient: bool = True) -> list[str]:  # type: ignore[no-untyped-def]
    return signature_problems(inspect.signature(fn), ENTRY, kwargs_may_be_named=lenient)


def table_reading(self, dst_cache_key, src_cache, src_batch_index=0, size=-1, **kwargs): ...  # type: ignore[no-untyped-def]


def prototype_reading(self, dst_cache_key, src_cache, src_batch_index=0, src_layer_range=None,  # type: ignore[no-untyped-def]
                      dst_layer_range=None, size=-1): ...


def size_first(self, dst_cache_key, src_cache, size=-1, src_batch_index=0, **kwargs): ...  # type: ignore[no-untyped-def]


def unknown_name(self, dst_cache_key, src_cache, src_batch_index=0, batch=None, size=-1): ...  # type: ignore[no-untyped-def]


def wrong_default(self, dst_cache_key, src_cache, src_batch_index=1, size=-1, **kwargs): ...  # type: ignore[no-untyped-def]


def test_both_readings_conform() -> None:
    assert _problems(table_reading) == []
    assert _problems(prototype_reading) == []


def test_the_strict_check_takes_the_table_reading_only() -> None:
    assert _problems(table_reading, lenient=False) == []
    assert _problems(prototype_reading, lenient=False)


def test_what_both_readings_share_is_still_checked() -> None:
    assert any("parameters are" in p for p in _problems(size_first))
    assert any("parameters are" in p for p in _problems(unknown_name))
    assert any("src_batch_index defaults to 1" in p for p in _problems(wrong_default))


def test_the_clause_is_may_and_asks_for_the_envelope() -> None:
    clause = load_spec().clause("push_cache.signature.parameters_v83a002")
    assert clause.level == "may" and clause.procedure.kwargs_may_be_named is True
