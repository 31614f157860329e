"""One helper drops options from a recorded command line, for verify (the options it chooses) and merge (the
options that differ between shards): every spelling goes, and nothing else does."""

from __future__ import annotations

import pytest

from conformance_tests.cli.options import without_options
from conformance_tests.report.merge import PER_SHARD_OPTIONS, shard_argv
from conformance_tests.report.replay import CHOSEN_BY_VERIFY


@pytest.mark.parametrize("argv, kept", [
    (["--shard", "1/2", "--backend", "x"], ["--backend", "x"]),
    (["--shard=1/2", "-n2", "-n", "3", "--dist=load", "-k", "data"], ["-k", "data"]),
    (["--rootdir", ".", "--report-dir=r", "-nauto", "--spec", "s.yaml"], ["--spec", "s.yaml"]),
    (["--numprocesses", "2", "-q"], ["-q"]),
])
def test_shard_options_and_their_values_go(argv: list[str], kept: list[str]) -> None:
    assert shard_argv(argv) == kept, (argv, PER_SHARD_OPTIONS)


def test_a_flag_without_a_value_goes_alone() -> None:
    # --no-reports takes no value: the argument after it is the run's own and stays
    argv = ["--no-reports", "--backend", "x", "--report-dir", "d", "--report-dir=e"]
    assert without_options(argv, CHOSEN_BY_VERIFY) == ["--backend", "x"], argv


def test_a_longer_short_option_is_not_mistaken_for_one_with_its_value() -> None:
    # "-nx" is -n with value x; "--n" and "-k" are other options
    assert without_options(["-nx", "--nothing", "-kn2"], ("-n",)) == ["--nothing", "-kn2"]
