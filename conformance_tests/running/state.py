"""The run state: everything the plugin knows about one certification run, created in ``pytest_configure`` and
held by the run's plugin objects (and in ``config.stash``) until ``pytest_unconfigure``."""

from __future__ import annotations

import datetime as _dt
import time
from pathlib import Path
from typing import Any

import pytest

from ..cli.exitcodes import RunResult
from ..selecting.expectations import Expectations
from ..selecting.shards import Shard
from . import profiles
from .context import RunContext
from .rows import Rows

#: the overall time budget of a run unless --max-time says otherwise (the reference certifies in about a minute)
DEFAULT_MAX_TIME_S = 3600.0


class RunState:
    """Everything the plugin knows about this run."""

    def __init__(self, config: pytest.Config, result: RunResult) -> None:
        self.config = config
        #: what the run decided, for whoever started it (the certify CLI registers its own)
        self.result = result
        self.ctx: RunContext | None = None
        self.expectations: Expectations | None = None
        self.strict = False
        self.profile = profiles.DEFAULT
        self.seed: Any = None
        self.started = _dt.datetime.now(_dt.UTC)
        self.t0 = time.monotonic()
        self.rows = Rows()
        self.covered: set[str] = set()
        self.full_selection = True
        self.report: dict[str, Any] | None = None
        self.report_paths: dict[str, str] = {}
        self.report_problem: str | None = None
        #: under pytest-xdist the controller learns the collection from the workers (see selecting/collection.py)
        self.collection_known = True
        # full or partial
        self.own_deselected: dict[str, str] = {}  # node id -> why (the release filter is not "left out")
        self.release_filtered: set[str] = set()
        self.deselected: list[str] = []  # by pytest's -k/-m/--deselect (or another plugin)
        self.selected: list[str] = []
        self.collection_errors: list[str] = []
        #: --shard K/N: this run's part, every test selected before the split (collection order) and the shard
        #: each of them went to (see selecting/shards.py)
        self.shard: Shard | None = None
        self.shard_selection: list[str] = []
        self.shard_assigned: list[int] = []
        self.interrupts: list[str] = []
        self.packaged_sha256: str | None = None
        self.report_dir: Path | None = None
        self.full_dir: Path | None = None
        self.kept_full: Path | None = None
        self.exit_code: int | None = None
        self.is_worker = hasattr(config, "workerinput")  # a pytest-xdist worker: the controller writes the reports
        self.isolation = "off"
        self.max_time = DEFAULT_MAX_TIME_S
        #: certify --reruns N: how many times a failed test runs again (None: never; see attempts.py)
        self.reruns: int | None = None
        self.out_of_time: str | None = None
        #: certify --until-failed: the clause IDs whose failures, once every one has failed, end the run (empty:
        #: none), and those that have
        self.until_failed: frozenset[str] = frozenset()
        self.failed_of_until: set[str] = set()

    def uncovered(self) -> list[str]:
        """The selected release's clauses no collected test checks."""
        return [c.id for c in self.run.selected.clauses if c.id not in self.covered]

    @property
    def run(self) -> RunContext:
        assert self.ctx is not None, "the run context is made in pytest_configure"
        return self.ctx
