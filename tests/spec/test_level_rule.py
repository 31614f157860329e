"""The documentation rule of spec/README.md ("Which level a sentence grounds"), as far as a program can check it:

* a sentence that only says what is supported (支持 in the Chinese quote, the original) and names no error (no
  抛出, "is thrown") grounds no ``must`` refusal: such a clause's expect, and every case's, allows a success;
* a ``must`` clause sourced only from the fact sheet says in its note whether it is integrity or safety, or
  which documentation page it cites through the fact sheet (``Documented:``).

Each check is also run on a spec copy broken on purpose, so that it is seen to fail.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from conformance_tests.spec import default_spec_path, load_spec

SUPPORTED = "支持"
STATES_ERROR = "抛出"
FACTS_LABEL = re.compile(r"^(Integrity|Safety|Safety and integrity|Documented):")


def _fragments(quote: str | None) -> list[str]:
    return [f.strip() for f in (quote or "").split(" ... ") if f.strip()]


def _expects_refusal(expect: Mapping[str, Any] | None) -> bool:
    return bool(expect) and "raises" in expect


def supported_only_refusals(clauses: Iterable[Mapping[str, Any]]) -> list[str]:
    """must clauses whose Chinese quote says what is supported, states no error, and expect a refusal."""
    out = []
    for c in clauses:
        source = c.get("source") or {}
        if c.get("level") != "must" or source.get("kind") != "doc":
            continue
        parts = _fragments(source.get("zh"))
        if not any(SUPPORTED in p for p in parts) or any(STATES_ERROR in p for p in parts):
            continue
        refusing = [f"expect {c['expect']}"] if _expects_refusal(c.get("expect")) else []
        refusing += [f"case {k.get('name')}" for k in c.get("cases") or () if _expects_refusal(k.get("expect"))]
        if refusing:
            out.append(f"{c['id']}: quotes a 'supported' sentence that names no error, yet requires a refusal "
                       f"({', '.join(refusing)})")
    return out


def unlabelled_facts_musts(clauses: Iterable[Mapping[str, Any]]) -> list[str]:
    return [f"{c['id']}: a must clause from the fact sheet whose note does not start with Integrity:, Safety: "
            f"or Documented: (note: {c.get('note')!r})"
            for c in clauses
            if c.get("level") == "must" and (c.get("source") or {}).get("kind") == "facts"
            and not FACTS_LABEL.match(str(c.get("note") or ""))]


def _raw_clauses() -> list[dict[str, Any]]:
    return yaml.safe_load(default_spec_path().read_text(encoding="utf-8"))["clauses"]


def test_no_must_refusal_rests_on_a_supported_only_sentence() -> None:
    problems = supported_only_refusals(_raw_clauses())
    assert not problems, "\n".join(problems)


def test_every_must_clause_from_the_fact_sheet_says_why_it_is_must() -> None:
    problems = unlabelled_facts_musts(_raw_clauses())
    assert not problems, "\n".join(problems)


def test_the_checks_see_a_clause_broken_on_purpose() -> None:
    clauses = copy.deepcopy(_raw_clauses())
    by_id = {c["id"]: c for c in clauses}
    entry = by_id["push_cache.restriction.size.entry_size"]
    entry["level"], entry["expect"] = "must", {"raises": ["LLMException"]}   # the spec before issue 19
    contiguous = by_id["push_cache.restriction.host_to_device.contiguous"]
    contiguous["level"] = "must"
    contiguous["cases"][0]["expect"] = {"raises": ["TypeError", "ValueError", "LLMException"]}
    found = supported_only_refusals(clauses)
    assert [p.split(":")[0] for p in found] == ["push_cache.restriction.size.entry_size",
                                                "push_cache.restriction.host_to_device.contiguous"], found
    assert "case blocks_host_source" in found[1]
    by_id["push_cache.safety.guard_bytes"].pop("note")
    assert [p.split(":")[0] for p in unlabelled_facts_musts(clauses)] == ["push_cache.safety.guard_bytes"]


def test_a_refusal_with_a_stated_error_is_not_flagged() -> None:
    # restriction.layer_range.step: "step只支持1 ... layer_range参数异常会抛出LLMException异常" is a must refusal
    clause = load_spec().clause("push_cache.restriction.layer_range.step")
    assert clause.level == "must" and SUPPORTED in (clause.source.zh or "") and STATES_ERROR in (clause.source.zh or "")
    assert not supported_only_refusals([c for c in _raw_clauses() if c["id"] == clause.id])
