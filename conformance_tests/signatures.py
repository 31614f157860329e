"""A live push_cache signature compared with the spec's signature entry for a release."""

from __future__ import annotations

import inspect

_EMPTY = inspect.Parameter.empty


def signature_problems(sig: inspect.Signature, entry: dict, *, kwargs_may_be_named: bool = False) -> list[str]:
    """Differences between a live signature and a spec signature entry (self excluded). ``kwargs_may_be_named``:
    the names the entry takes through ``**kwargs`` may instead be named parameters, and ``**kwargs`` may be absent
    (a page whose prototype and parameter table disagree: either reading conforms)."""
    problems = []
    params = [p for p in sig.parameters.values() if p.name != "self"]
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY, p.KEYWORD_ONLY)]
    want = [p for p in entry.get("parameters", []) if p.get("kind") != "var_keyword"]
    if kwargs_may_be_named:
        through = {n.strip() for p in entry.get("parameters", []) if p.get("kind") == "var_keyword"
                   for n in str(p.get("type", "")).split(",")}
        named = [p for p in named if p.name not in through]
    got_names = [p.name for p in named]
    want_names = [p["name"] for p in want]
    if got_names != want_names:
        problems.append(f"parameters are {got_names}, the spec says {want_names}")
    live = {p.name: p for p in named}
    for p in want:
        q = live.get(p["name"])
        if q is None:
            continue
        if q.kind is not q.POSITIONAL_OR_KEYWORD:
            problems.append(f"{p['name']} is {q.kind.description}, the spec says positional or keyword")
        if p.get("required"):
            if q.default is not _EMPTY:
                problems.append(f"{p['name']} has default {q.default!r}, the spec says it is required")
        elif "default" in p:
            if q.default is _EMPTY:
                problems.append(f"{p['name']} has no default, the spec says {p['default']!r}")
            elif q.default != p["default"] or type(q.default) is not type(p["default"]):
                problems.append(f"{p['name']} defaults to {q.default!r}, the spec says {p['default']!r}")
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    var_kwargs = entry.get("var_kwargs")
    wants_var_kw = bool(var_kwargs) or any(p.get("kind") == "var_keyword" for p in entry.get("parameters", []))
    if has_var_kw != wants_var_kw and not kwargs_may_be_named:
        problems.append(f"**kwargs is {'present' if has_var_kw else 'absent'}, the spec says "
                        f"{'present' if wants_var_kw else 'absent'}")
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        problems.append("push_cache takes *args; the spec has none")
    return problems
