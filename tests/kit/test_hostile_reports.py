"""Hostile reports: `report verify` re-runs only what replay.py allows (a planted plugin, ini file, rootdir,
override, test path, backend file, output file or argument file is refused, one line and exit 2, nothing of it
runs and no file of the user's changes); every report command refuses a report nested too deep, one line and
exit 2, at once.

Each probe is first given to `certify` itself, which runs it (its marker is written, the user's file overwritten):
so a refusal by verify is verify's doing, not a probe that could never bite."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance_tests.cli.exitcodes import USAGE_ERROR
from conformance_tests.cli.options import OPTIONS
from conformance_tests.report.replay import PYTEST_REPLAYED, replay_parser, replayable
from conformance_tests.report.schema import MAX_DEPTH, ReportError
from tests.helpers import ROOT, child_pythonpath
from tests.helpers.certify import certify

pytestmark = pytest.mark.xdist_group("test_hostile_reports")

SMALL = "push_cache.signature.*"
#: what a planted module does when it is imported: proof that code named by the report ran
PLANT = "import pathlib\npathlib.Path({marker!r}).write_text('ran')\n"
#: the user's file a tampered report aims --junitxml at
USERS = "the user's notes\n"


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hostile-small")
    proc = certify("--clauses", SMALL, "--report-dir", str(out), "-q")
    assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]
    return out / "report.json"


class Probe:
    """A folder elsewhere holding planted code, the verifier's own folder, and the user's file."""

    def __init__(self, tmp: Path) -> None:
        self.elsewhere = tmp / "elsewhere"
        self.here = tmp / "here"
        self.elsewhere.mkdir()
        self.here.mkdir()
        self.marker = tmp / "marker"
        code = PLANT.format(marker=str(self.marker))
        (self.elsewhere / "planted.py").write_text(code)
        (self.elsewhere / "conftest.py").write_text(code)
        (self.elsewhere / "test_planted.py").write_text(code + "def test_planted():\n    pass\n")
        (self.elsewhere / "adapter.py").write_text(code + "from reference_impl.backend import backend\n")
        (self.elsewhere / "planted.ini").write_text(f"[pytest]\npythonpath = {self.elsewhere}\naddopts = -p planted\n")
        self.users = self.here / "notes.xml"
        self.users.write_text(USERS)
        # pytest reads -p before it expands argument files: the file aims at the user's file instead
        (self.elsewhere / "args.txt").write_text(f"--junitxml={self.users}\n")

    def args(self, case: str) -> list[str]:
        e = self.elsewhere
        return {
            "plugin": ["-p", "planted"],
            "ini": ["-c", str(e / "planted.ini")],
            "rootdir": ["--rootdir", str(e), str(e / "conftest.py")],
            "override": ["-o", f"pythonpath={e}", "-p", "planted"],
            "test path": [str(e / "test_planted.py")],
            "backend file": ["--backend", str(e / "adapter.py")],
            "junitxml": [f"--junitxml={self.users}"],
            "argfile": [f"@{e / 'args.txt'}"],
        }[case]

    def bit(self) -> bool:
        """Whether the probe ran code or wrote over the user's file."""
        return self.marker.exists() or self.users.read_text() != USERS


CASES = ["plugin", "ini", "rootdir", "override", "test path", "backend file", "junitxml", "argfile"]


def run_verify(report: Path, cwd: Path, first: tuple[Path, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``report verify REPORT`` in ``cwd``, with ``first`` on the path (where a planted module is importable, as
    it is for the control run of certify)."""
    import os

    env = {k: v for k, v in os.environ.items() if k != "PUSH_CACHE_BACKEND"}
    return subprocess.run([sys.executable, "-m", "conformance_tests", "report", "verify", str(report)], cwd=cwd,
                          capture_output=True, text=True, timeout=300,
                          env={**env, "PYTHONPATH": child_pythonpath(first)})


def tampered(small: Path, dst: Path, extra: list[str], backend_spec: str | None = None) -> Path:
    report = json.loads(small.read_text())
    report["run"]["certify_args"] = [*report["run"]["certify_args"], *extra]
    if backend_spec is not None:
        report["backend"]["spec"] = backend_spec
    dst.write_text(json.dumps(report))
    return dst


def _lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]


@pytest.mark.parametrize("case", CASES)
def test_certify_itself_runs_the_probe(tmp_path, case):
    """The control: given straight to certify, each probe runs its code or writes over the user's file."""
    probe = Probe(tmp_path)
    certify("--clauses", SMALL, "--no-reports", *probe.args(case), cwd=probe.here, pythonpath=[probe.elsewhere],
            timeout=300)
    assert probe.bit(), f"certify {probe.args(case)}: the probe ran nothing, so it proves nothing ({case})"


@pytest.mark.parametrize("case", CASES)
def test_verify_refuses_the_probe_in_one_line_and_runs_nothing(small, tmp_path, case):
    probe = Probe(tmp_path)
    report = tampered(small, tmp_path / "tampered.json", probe.args(case))
    proc = run_verify(report, probe.here, (probe.elsewhere,))
    lines = _lines(proc)
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and lines[0].startswith("error: "), (case, lines)
    assert not probe.marker.exists(), f"verify {probe.args(case)}: the planted code ran ({case})"
    assert probe.users.read_text() == USERS, f"verify {probe.args(case)}: the user's file changed ({case})"


def test_a_backend_file_elsewhere_named_by_the_header_is_refused(small, tmp_path):
    """certify_args without --backend: verify takes the header's backend.spec, checked as --backend is."""
    probe = Probe(tmp_path)
    report = json.loads(small.read_text())
    report["backend"]["spec"] = f"{probe.elsewhere / 'adapter.py'}:backend"
    (tmp_path / "t.json").write_text(json.dumps(report))
    proc = run_verify(tmp_path / "t.json", probe.here)
    lines = _lines(proc)
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and "outside this folder" in lines[0], lines
    assert not probe.marker.exists()


def test_a_backend_file_in_the_verifiers_folder_is_shown_then_run(small, tmp_path):
    """The honest case of a file backend: where it is comes first on stderr, then the re-run imports it."""
    probe = Probe(tmp_path)
    adapter = probe.here / "adapter.py"
    adapter.write_text((probe.elsewhere / "adapter.py").read_text())
    report = tampered(small, tmp_path / "file.json", ["--backend", "adapter.py"])
    proc = run_verify(report, probe.here)
    assert proc.stderr.startswith("verify: the re-run imports backend 'adapter.py'"), proc.stderr
    assert f"file {adapter.resolve()}" in proc.stderr.splitlines()[0], proc.stderr
    assert probe.marker.exists(), proc.stdout + proc.stderr


def test_an_honest_report_shows_its_backend_and_where_it_comes_from(small):
    proc = run_verify(small, ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("VERIFIED:"), proc.stdout + proc.stderr
    first = proc.stderr.splitlines()[0]
    assert first.startswith("verify: the re-run imports backend 'reference_impl.backend:backend'"), proc.stderr
    assert str(ROOT / "reference_impl" / "__init__.py") in first, first


# ------------------------------------------------------------------------------------------ the allow-list


def test_every_option_of_certify_is_replayed_and_the_report_dir_is_verifys():
    """The kit's options come from options.OPTIONS, as certify --help lists them; where reports go is dropped."""
    parser = replay_parser()
    known = {o for a in parser._actions for o in a.option_strings}
    assert {f for flags, _ in OPTIONS for f in flags} <= known
    kept, given = replayable(["--report-dir", "x", "--no-reports", "--report-dir=y", "--clauses", "a.*"])
    assert kept == ["--clauses", "a.*"] and given.clauses == "a.*", kept


def help_options(text: str) -> dict[str, bool]:
    """Each option `certify --help` lists, and whether it takes a value there (``-k EXPRESSION``, ``--maxfail=num``):
    an option line is two spaces, then its spellings up to two spaces or the line's end."""
    found: dict[str, bool] = {}
    for line in text.splitlines():
        m = re.match(r"  (-\S.*?)(?:  |$)", line)
        if m is None:
            continue
        for spelling in m.group(1).split(", "):
            parts = re.split(r"[ =]", spelling, maxsplit=1)
            found.setdefault(parts[0], len(parts) > 1)
    return found


def test_every_replayed_pytest_option_is_one_certify_accepts():
    """PYTEST_REPLAYED names pytest's (and its plugins') options: each is in `certify --help`, taking a value there
    exactly when it takes one here."""
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "certify", "--help"], capture_output=True,
                          text=True, timeout=120, cwd=ROOT, env=_env())
    listed = help_options(proc.stdout)
    assert listed.get("--maxfail") is True and listed.get("-x") is False, "the help's layout changed"
    for flags, kwargs in PYTEST_REPLAYED:
        takes_value = kwargs.get("action") not in ("store_true", "count")
        for flag in flags:
            assert flag in listed, f"certify --help: no option {flag} (PYTEST_REPLAYED)"
            assert listed[flag] == takes_value, (flag, listed[flag], takes_value)


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": child_pythonpath()}


@pytest.mark.parametrize("args", [["-p", "no:warnings", "-pno:randomly"], ["-k", "param", "-m", "not slow"],
                                  ["--hypothesis-profile", "explore", "--hypothesis-seed=12"], ["-n", "auto", "-qq"],
                                  ["--shard", "2/3"], ["--isolation=process", "--max-time", "30"]])
def test_what_a_user_runs_is_replayed(args):
    assert replayable(args)[0] == args


@pytest.mark.parametrize(("args", "said"), [
    (["-p", "pytest_cov"], "loads a plugin"),
    (["-pplanted"], "loads a plugin"),
    (["-qp", "planted"], "loads a plugin"),
    (["--hypothesis-profile", "nosuch"], "invalid choice"),
    (["--shard", "3/2"], "K/N"),
    (["-n", "many"], "number of workers"),
    (["--clauses", "@args.txt"], "argument file"),
    (["--back", "x"], "option verify does not re-run"),
    (["--", "conformance_tests/suite/test_signature.py"], "'--'"),
    (["conformance_tests/suite/test_signature.py"], "a test path"),
])
def test_values_are_checked(args, said):
    with pytest.raises(ReportError, match=said) as info:
        replayable(args)
    assert "\n" not in str(info.value), str(info.value)


# ------------------------------------------------------------------------------------------ bounds


def _deep(depth: int) -> str:
    return '{"schema_version": ' + "[" * depth + "]" * depth + "}"


DEEP_COMMANDS = [["report", "verify", "{r}"], ["report", "summary", "{r}"], ["report", "render", "{r}"],
                 ["report", "diff", "{r}", "{r}"], ["report", "merge", "{r}", "--out", "{out}"],
                 ["site", "{r}", "--out", "{out}"]]


@pytest.mark.parametrize("depth", [100_000, MAX_DEPTH + 1])
@pytest.mark.parametrize("command", DEEP_COMMANDS, ids=lambda c: " ".join(c[:2]))
def test_a_deep_report_is_one_line_and_exit_2_at_once(tmp_path, capsys, command, depth):
    """Deeper than the decoder's guard (100,000) or than the kit's bound alone (MAX_DEPTH + 1)."""
    from conformance_tests.__main__ import main

    path = tmp_path / "deep.json"
    path.write_text(_deep(depth))
    argv = [a.format(r=path, out=tmp_path / "out") for a in command]
    started = time.monotonic()
    code = main(argv)
    took = time.monotonic() - started
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == USAGE_ERROR and took < 1.0, (argv, code, took)
    assert len(err) == 1 and f"{path}: not a valid report: nested deeper than {MAX_DEPTH} levels" in err[0], err


def test_a_deep_report_gives_no_traceback(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text(_deep(100_000))
    proc = subprocess.run([sys.executable, "-m", "conformance_tests", "report", "summary", str(path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=_env())
    lines = _lines(proc)
    assert proc.returncode == USAGE_ERROR and len(lines) == 1, lines
    assert lines[0] == f"error: {path}: not a valid report: nested deeper than {MAX_DEPTH} levels", lines


def test_a_deep_report_in_the_merge_folder_is_not_a_full_one(tmp_path):
    """merge reads the --out folder's report.json to keep a full one: a deep one there is none."""
    from conformance_tests.report.folders import holds_full_report

    (tmp_path / "report.json").write_text(_deep(100_000))
    assert holds_full_report(tmp_path) is False


# ------------------------------------------------------------------------------------------ relabelled reports


def _edited(src: Path, dst: Path, edit) -> Path:
    report = json.loads(src.read_text())
    edit(report)
    dst.write_text(json.dumps(report))
    return dst


def test_verify_names_a_relabelled_backend(small, tmp_path):
    """What the merge cannot see (a backend relabelled in its report), the re-run does."""
    renamed = _edited(small, tmp_path / "renamed.json", lambda r: r["backend"].update(name="acme"))
    proc = run_verify(renamed, ROOT)
    assert proc.returncode == 1 and "  backend.name: acme in the report, reference now" in proc.stdout, proc.stdout
    moved = _edited(small, tmp_path / "moved.json", lambda r: r["backend"].update(name="acme",
                                                                                    spec="acme.adapter:backend"))
    lines = _lines(run_verify(moved, ROOT))
    assert len(lines) == 1 and "no module named 'acme'" in lines[0], lines


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    """The reference's two shards of a small selection, as certify writes them (the packaged spec's clauses), with
    the kit's default isolation (auto: the reference in process)."""
    where = tmp_path_factory.mktemp("hostile-shards")
    out = []
    for k in (1, 2):
        proc = certify("--clauses", SMALL, "--shard", f"{k}/2", "--report-dir", str(where / f"s{k}"), "-q",
                       isolation=())
        assert proc.returncode == 5, proc.stdout[-2000:] + proc.stderr[-2000:]
        out.append(where / f"s{k}" / "report.json")
    return out


def merge(paths: list[Path], out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "conformance_tests", "report", "merge", *map(str, paths), "--out",
                           str(out)], capture_output=True, text=True, timeout=120, cwd=ROOT, env=_env())


def _drop_the_other_shard(report: dict) -> None:
    """Shard 1/2 made to claim 1/1, the clauses of shard 2's tests gone from its clause list."""
    shard = report["completeness"]["shard"]
    mine = {t["id"] for t in report["tests"]}
    ran = {c for t in report["tests"] for c in t["clauses"]}
    shard.update(index=1, count=1, selection=[n for n in shard["selection"] if n in mine])
    shard["assigned"] = [1] * len(shard["selection"])
    report["completeness"]["left_out"] = [e for e in report["completeness"]["left_out"] if e["id"] not in mine
                                          and e["why"] != "another shard"]
    report["clauses"] = [c for c in report["clauses"] if c["id"] in ran]
    report["clause_summary"]["clauses"] = len(report["clauses"])


@pytest.mark.parametrize(("how", "edit", "said"), [
    ("1/1, clauses dropped", _drop_the_other_shard, "of its clauses missing"),
    ("display name", lambda r: r["backend"].update(name="acme"), "is the kit's own backend 'reference'"),
    ("name and target", lambda r: r["backend"].update(name="acme", spec="acme.adapter:backend"),
     "--isolation auto gives acme.adapter:backend 'process'"),
])
def test_real_shards_edited_are_refused_by_the_merge(shards, tmp_path, how, edit, said):
    honest = merge(shards, tmp_path / "honest")
    assert honest.returncode == 5, honest.stdout + honest.stderr  # PARTIAL: the selection is --clauses
    paths = [_edited(p, tmp_path / f"e{i}.json", edit) for i, p in enumerate(shards)]
    proc = merge(paths if how != "1/1, clauses dropped" else paths[:1], tmp_path / "out")
    lines = _lines(proc)
    assert proc.returncode == USAGE_ERROR and len(lines) == 1 and said in lines[0], (how, lines)
    assert not (tmp_path / "out").exists()
