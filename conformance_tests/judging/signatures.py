"""A live push_cache signature compared with the spec's signature of a release."""

from __future__ import annotations

import inspect

from ..spec import Signature

_EMPTY = inspect.Parameter.empty


def signature_problems(sig: inspect.Signature, spec: Signature, *, kwargs_may_be_named: bool = False) -> list[str]:
    """Differences between a live signature and the spec's (self excluded). ``kwargs_may_be_named``: the names the
    spec takes through ``**kwargs`` may instead be named parameters, and ``**kwargs`` may be absent (a page whose
    prototype and parameter table disagree: either reading conforms)."""
    problems = []
    params = [p for p in sig.parameters.values() if p.name != "self"]
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.POSITIONAL_ONLY, p.KEYWORD_ONLY)]
    want = spec.declared
    if kwargs_may_be_named:
        through = {n for p in spec.parameters for n in p.through_kwargs}
        named = [p for p in named if p.name not in through]
    got_names = [p.name for p in named]
    want_names = [p.name for p in want]
    if got_names != want_names:
        problems.append(f"parameters are {got_names}, the spec says {want_names}")
    live = {p.name: p for p in named}
    for p in want:
        q = live.get(p.name)
        if q is None:
            continue
        if q.kind is not q.POSITIONAL_OR_KEYWORD:
            problems.append(f"{p.name} is {q.kind.description}, the spec says positional or keyword")
        if p.required:
            if q.default is not _EMPTY:
                problems.append(f"{p.name} has default {q.default!r}, the spec says it is required")
        elif p.has_default:
            if q.default is _EMPTY:
                problems.append(f"{p.name} has no default, the spec says {p.default!r}")
            elif q.default != p.default or type(q.default) is not type(p.default):
                problems.append(f"{p.name} defaults to {q.default!r}, the spec says {p.default!r}")
    has_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    if has_var_kw != spec.takes_var_kwargs and not kwargs_may_be_named:
        problems.append(f"**kwargs is {'present' if has_var_kw else 'absent'}, the spec says "
                        f"{'present' if spec.takes_var_kwargs else 'absent'}")
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        problems.append("the operation takes *args; the spec has none")
    return problems
