"""Example streams: property clauses draw valid layouts from the spec's domains (the ``random_layouts``
procedure) and judge one push of each. Each stream is a hypothesis run of its own, seeded from its clause ID and
key under the derandomized profiles, so renaming a title or a case changes no example."""

from __future__ import annotations

import contextlib
import zlib
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import Phase, given, seed, settings
from hypothesis import strategies as st

from ..inputs import block_strategies, strategies
from ..judging.judge import judge
from ..running.context import RunContext
from ..running.profiles import CERTIFY_EXAMPLES
from ..spec import Clause, Expectation
from ..spec.expect import check_names
from .common import opened, per_call_bound, require
from .registry import Item, procedure

#: seconds each example of a stream adds to its test's time bound (a hung push is caught sooner, per call)
SECONDS_PER_EXAMPLE = 5
#: the layouts a stream draws, by the unit the spec's operation moves (its ``operation.unit``)
LAYOUTS: dict[str, Callable[..., st.SearchStrategy[Any]]] = {
    "batch": strategies.layouts, "blocks": block_strategies.block_layouts}


def stream_seed(clause_id: str, key: str) -> int:
    """A stream's seed: from the clause ID and the stream key only (not from titles or test names)."""
    return zlib.crc32(f"{clause_id}|{key}".encode())


def _profile() -> settings:
    current = settings.default
    assert current is not None  # hypothesis always has a loaded profile
    return current


def examples(run: RunContext, kind: str) -> int:
    """Examples per stream of ``kind``: the spec's count, scaled by the loaded hypothesis profile (the certify
    profile's examples: as written)."""
    counts = run.spec.generation.examples if run.spec.generation is not None else {}
    n = int(counts.get(kind, CERTIFY_EXAMPLES))
    return max(1, n * _profile().max_examples // CERTIFY_EXAMPLES)


def run_stream(run: RunContext, clause_id: str, key: str, count: int, strategy: st.SearchStrategy[Any],
               body: Callable[[Any], None]) -> None:
    """Run ``body`` over ``count`` examples of a hypothesis stream of its own (its seed fixed under the
    derandomized profiles); a failing example is shrunk within the run's --shrink-time (0: reported as found)."""
    __tracebackhide__ = True
    phases = [p for p in _profile().phases if run.shrink_s > 0 or p is not Phase.shrink]

    @settings(max_examples=count, phases=phases)
    @given(strategy)
    def stream(example: Any) -> None:
        body(example)

    if _profile().derandomize:
        stream = seed(stream_seed(clause_id, key))(stream)
    with shrinking_within(run.shrink_s):
        stream()


@contextlib.contextmanager
def shrinking_within(seconds: float) -> Iterator[None]:
    """Hypothesis stops shrinking after ``seconds`` (where its engine has the bound; otherwise its own): it has no
    setting for it, the bound is its engine's constant, lowered for the run and restored after it."""
    from hypothesis.internal.conjecture import engine

    previous = getattr(engine, "MAX_SHRINKING_SECONDS", None)
    if not isinstance(previous, int | float):
        yield
        return
    engine.MAX_SHRINKING_SECONDS = int(min(previous, seconds))
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = int(previous)


def _layout_items(run: RunContext, clause: Clause) -> list[Item]:
    """One stream, or one per documented DataType (``each: data_type``) or per placement pair of the clause's
    level (``each: transfer``)."""
    each = clause.procedure.each
    if each == "data_type":
        dom = strategies.domain(run.spec, clause.level, run.caps, run.params)
        return [Item(dt, ("data_type", dt), examples(run, "random_layouts_each")) for dt in dom.data_types]
    if each == "transfer":
        mine = [p for p in run.spec.types.transfers if p.level.rank <= clause.level.rank]
        return [Item(f"{p.src}_to_{p.dst}", ("transfer", (p.src, p.dst)), examples(run, "random_layouts_each"))
                for p in mine]
    return [Item("layouts", None, examples(run, "random_layouts"))]


@procedure("random_layouts", _layout_items)
def run_random_layouts(run: RunContext, clause: Clause, item: Item) -> None:
    """Random valid layouts drawn from the spec's domains; each pushed once and judged by the clause's expect."""
    __tracebackhide__ = True
    require(run, clause.requires)
    expectation = clause.expect
    dom = strategies.domain(run.spec, clause.level, run.caps, run.params)
    kw: dict[str, Any] = {}
    if item.data is not None:
        what, value = item.data
        if what == "transfer":
            require(run, [f"placements.{value[0]}", f"placements.{value[1]}"])
        kw[what] = value
    if "guards" in check_names(expectation):
        kw["dst_register"] = True  # guard bands surround registered memory only (a blocks layout has none: an error)

    def body(drawn: tuple[strategies.Layout, str]) -> None:
        layout, form = drawn
        push_layout(run, clause, layout, expectation, f"{layout}, {form}", positional=form == "positional")

    layouts = LAYOUTS[run.spec.operation.unit](dom, **kw)
    run_stream(run, clause.id, item.key, item.examples, st.tuples(layouts, st.sampled_from(call_forms(run))), body)


def call_forms(run: RunContext) -> tuple[str, ...]:
    """The calling forms a drawn layout's call takes: those the spec's coverage section must reach (its
    ``call_forms`` dimensions), by keyword where it names none."""
    cov = run.spec.coverage
    forms = [str(f) for d in (cov.dimensions.values() if cov is not None else ()) if d.kind == "call_forms"
             for f in d.params["forms"]]
    return tuple(dict.fromkeys(forms)) or ("keywords",)


def push_layout(run: RunContext, clause: Clause, layout: strategies.Layout, expectation: Expectation,
                label: str, *, positional: bool = False) -> None:
    """Open the layout's scenario, push once with its arguments (all of them positionally where ``positional``
    says), judge the push."""
    __tracebackhide__ = True
    with opened(run, layout.scenario(run.spec.scenario), guard=False, seed=layout.seed) as tb:
        push = tb.call(layout.args(run.params, run.spec.operation), positional=positional)
        outcome = tb.push(push, bound=per_call_bound(run))
        judge(tb, push, outcome, expectation, clause.id, label)
