"""Collection: the suite's tests generated from the spec, each marked with its clause; the release filter and
``--clauses``; levels, capability skips and waivers attached to each test; a shard's part of the selection
(``--shard``); what a run selected (and, under pytest-xdist, what the workers' collection decided)."""

from __future__ import annotations

import fnmatch
from typing import Any

import pytest

from ..procedures import items_for
from ..procedures.streams import SECONDS_PER_EXAMPLE
from ..running.state import RunState
from ..spec import Level
from ..spec.model import HISTORY_PROCEDURE
from ..testbed.testbed import missing_capabilities
from .selection import WHY_CLAUSES, WHY_OTHER_SHARD, selection_problems
from .shards import ShardTest, assign

#: the mark of a suite module's test function: which clause family it runs (conformance_tests/suite/family.py)
FAMILY_MARK = "push_cache_family"
#: a stream's time bound starts from the per-test timeout, or this when there is none
BASE_TIMEOUT_S = 60

LEVEL = pytest.StashKey[Level]()
CLAUSES = pytest.StashKey[tuple[str, ...]]()
EXPECTED = pytest.StashKey[str]()
WAIVER = pytest.StashKey[dict]()


def clause_ids(item: pytest.Item) -> tuple[str, ...]:
    ids: list[str] = []
    for mark in item.iter_markers("clause"):
        ids += [str(a) for a in mark.args]
    return tuple(dict.fromkeys(ids))


def checked_clauses(item: pytest.Item) -> tuple[str, ...]:
    """The clause IDs collection attached to ``item`` (empty when it attached none)."""
    found: tuple[str, ...] | None = item.stash.get(CLAUSES, None)
    return found or ()


def examples_of(item: pytest.Item) -> int:
    """The examples of the item's stream (0 when it is not a stream), from the ``item`` parameter
    :meth:`Collection.pytest_generate_tests` gives it."""
    params = getattr(getattr(item, "callspec", None), "params", None) or {}
    return int(getattr(params.get("item"), "examples", 0) or 0)


def _test_names(item: pytest.Item) -> list[str]:
    nodeid = item.nodeid
    names = [nodeid, item.name]
    if "::" in nodeid:
        names.append(nodeid.split("::", 1)[1])
    return names


class Collection:
    def __init__(self, state: RunState) -> None:
        self.state = state

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        """One test per item of every clause of the family (the whole spec: the release filter deselects)."""
        mark = metafunc.definition.get_closest_marker(FAMILY_MARK)
        if mark is None:
            return
        run = self.state.run
        family = str(mark.args[0])
        params = []
        for clause in run.spec.clauses:
            if clause.family != family:
                continue
            for item in items_for(run, clause):
                marks = [pytest.mark.clause(clause.id, *item.also)]
                if item.examples:  # a stream: the per-test bound covers all of its examples
                    base = int(run.timeout or BASE_TIMEOUT_S)
                    per = item.seconds_per_example or SECONDS_PER_EXAMPLE
                    marks.append(pytest.mark.timeout(base + item.examples * per))
                params.append(pytest.param(clause, item, id=f"{clause.id}-{item.key}", marks=marks))
        metafunc.parametrize(("clause", "item"), params)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        state, run = self.state, self.state.run
        selected = {c.id: c for c in run.selected.clauses}
        known = {c.id for c in run.spec.clauses}
        globs = [g for g in config.getoption("clauses").split(",") if g]
        keep, drop = [], []
        for item in items:
            ids = clause_ids(item)
            if not ids and item.get_closest_marker(FAMILY_MARK) is not None:
                # a family the operation's spec has no clause of (push_blocks has no types clause): no test,
                # rather than pytest's skip of an empty parameter set
                drop.append(item)
                state.release_filtered.add(item.nodeid)
                continue
            if ids and all(cid in known and cid not in selected for cid in ids):
                drop.append(item)  # every clause it checks is outside the selected release
                state.release_filtered.add(item.nodeid)
                continue
            if globs and not any(fnmatch.fnmatchcase(cid, g) for cid in ids[:1] for g in globs):
                # not asked for with --clauses: a test is selected by the clause it belongs to (its first); the
                # other clauses a test judges (a history's) count as covered by it, but do not select it
                drop.append(item)
                state.own_deselected[item.nodeid] = WHY_CLAUSES
                continue
            keep.append(item)
            state.covered.update(ids)
            item.stash[CLAUSES] = ids
            level = Level.strictest(selected[c].level for c in ids if c in selected)
            item.stash[LEVEL] = level
            item.user_properties.append(("level", level.value))
            item.user_properties.append(("clauses", ",".join(ids)))
            expected = "pass"
            requires = [r for c in ids if c in selected for r in selected[c].requires]
            missing = missing_capabilities(run.caps, requires)
            if missing:
                item.add_marker(pytest.mark.skip(reason="not supported: " + ", ".join(dict.fromkeys(missing))))
            if state.expectations is not None:
                entry = state.expectations.lookup(ids, _test_names(item), record=None)  # hits: where reports arrive
                if entry is not None:
                    reason = f"expectations: {entry.reason}" + (f" ({entry.link})" if entry.link else "")
                    item.stash[WAIVER] = entry.waiver()
                    if entry.outcome == "skip":
                        item.add_marker(pytest.mark.skip(reason=reason))
                        expected = "skip"
                    else:
                        item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
                        expected = "xfail"
            item.stash[EXPECTED] = expected
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
        if state.until_failed:
            # every clause test before the histories': a run ended by a history's failure has run them all
            procedures = {c.id: c.procedure.name for c in run.spec.clauses}
            items.sort(key=lambda item: procedures.get((clause_ids(item) or [""])[0]) == HISTORY_PROCEDURE)

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        state = self.state
        for item in items:
            if item.nodeid not in state.release_filtered and item.nodeid not in state.own_deselected:
                state.deselected.append(item.nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.state.collection_errors.append(report.nodeid or "<collection>")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        state = self.state
        if session.config.option.collectonly:
            tr = session.config.pluginmanager.get_plugin("terminalreporter")
            missing = state.uncovered()
            if tr is not None:
                tr.write_line("uncovered clauses: " + (", ".join(missing) if missing else "none"))
        state.selected = [item.nodeid for item in session.items]
        self.judge_selection()

    def judge_selection(self) -> None:
        state = self.state
        state.full_selection = not (selection_problems(state.config) or state.deselected
                                    or state.own_deselected or state.collection_errors)

    def worker_collection(self) -> dict[str, Any]:
        """What a pytest-xdist worker's collection decided, for the controller (which does not collect)."""
        state = self.state
        return {"selected": state.selected, "deselected": state.deselected, "own_deselected": state.own_deselected,
                "release_filtered": sorted(state.release_filtered), "covered": sorted(state.covered),
                "collection_errors": list(state.collection_errors),
                "shard_selection": state.shard_selection, "shard_assigned": state.shard_assigned}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.state.is_worker and not session.config.option.collectonly:
            session.config.workeroutput["push_cache_collection"] = self.worker_collection()  # type: ignore[attr-defined]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        # every worker collects the same tests; the first one to finish tells the controller what was selected
        state = self.state
        got = getattr(node, "workeroutput", {}).get("push_cache_collection")
        if got is None or state.collection_known:
            return
        state.selected = list(got["selected"])
        state.deselected = list(got["deselected"])
        state.own_deselected = dict(got["own_deselected"])
        state.release_filtered = set(got["release_filtered"])
        state.covered = set(got["covered"])
        state.collection_errors[:] = list(got["collection_errors"])
        state.shard_selection = list(got["shard_selection"])
        state.shard_assigned = list(got["shard_assigned"])
        state.collection_known = True
        self.judge_selection()


class ShardFilter:
    """``--shard K/N``: keeps this shard's part of the selection, after every other plugin has selected (so the
    split is of what -k, -m, --deselect and --clauses left), and records the whole selection and the shard of
    each of its tests for the report (``completeness.shard``)."""

    def __init__(self, state: RunState) -> None:
        self.state = state

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, session: pytest.Session, config: pytest.Config,
                                      items: list[pytest.Item]) -> None:
        state = self.state
        if state.shard is None:
            return
        tests = [ShardTest(item.nodeid, clause_ids(item), 1 + examples_of(item)) for item in items]
        assigned = assign(tests, state.shard.count)
        state.shard_selection = [t.id for t in tests]
        state.shard_assigned = assigned
        keep = [item for item, shard in zip(items, assigned, strict=True) if shard == state.shard.index]
        drop = [item for item, shard in zip(items, assigned, strict=True) if shard != state.shard.index]
        for item in drop:
            state.own_deselected[item.nodeid] = WHY_OTHER_SHARD
            state.covered.difference_update(clause_ids(item))  # a clause's tests are all in one shard
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
