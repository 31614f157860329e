"""The README's figures, from the files the runs write: the reference's certification report
(``reports/reference/report.json``), the mutants' kill matrix (``reports/mutants/kill-matrix.json``), the
reference benchmark (``reports/bench/reference.json``) and, where it was run, the full-profile certification
through node processes (``reports/bench/nixl-certify.json``, ``bench/bench_nixl.py --certify``), with the spec for
what it states.

    python docs/figures.py --record   read those files into docs/figures.json (after tox -e certify,mutants,bench;
                                      the NIXL figures are kept from the last record where that file is missing)
    python docs/figures.py --time-tests  run the default tox environment's command (tox.ini) in this Python, timed,
                                      and record its counts (from its JUnit XML), wall time, date and the load
                                      average at its start (other work on the cores) in docs/figures.json
    python docs/figures.py --write    put docs/figures.json's figures into README.md (between the markers)
    python docs/figures.py            print the README block

``tests/kit/test_figures.py`` checks that README.md holds the block docs/figures.json gives, that the deterministic
figures (tests, clauses, calls, layouts, verdicts, mutants) are the last run's, and the spec's counts.
"""

from __future__ import annotations

import configparser
import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "figures.json"
README = ROOT / "README.md"
REPORT = ROOT / "reports" / "reference" / "report.json"
KILL_MATRIX = ROOT / "reports" / "mutants" / "kill-matrix.json"
BENCH = ROOT / "reports" / "bench" / "reference.json"
NIXL_CERTIFY = ROOT / "reports" / "bench" / "nixl-certify.json"
TOX_INI = ROOT / "tox.ini"
SELF_TESTS_JUNIT = ROOT / "reports" / "self-tests" / "junit.xml"
BEGIN, END = "<!-- figures:begin (docs/figures.py --write; from docs/figures.json) -->", "<!-- figures:end -->"


def spec_figures() -> dict[str, Any]:
    """What the packaged spec states: its clauses by level in its newest release, its recorded deviations."""
    sys.path.insert(0, str(ROOT))
    from conformance_tests.spec import load_spec

    spec = load_spec()
    newest = spec.for_release(spec.releases[-1])
    levels = Counter(c.level.value for c in newest.clauses)
    return {"release": spec.releases[-1], "clauses": len(newest.clauses),
            "must": levels["must"], "should": levels["should"], "may": levels["may"],
            "deviations": sum(1 for c in newest.clauses if c.deviation)}


def report_figures(report: dict[str, Any]) -> dict[str, Any]:
    """The deterministic figures of a certification report, and its duration."""
    summary = report["summary"]
    return {"verdict": report["verdict"]["label"], "tests": summary["tests"], "passed": summary["passed"],
            "not_supported": summary["not_supported"], "push_calls": report["run"]["push_calls"],
            "distinct_layouts": report["run"]["distinct_layouts"],
            "histories": report["run"]["histories"], "history_steps": report["run"]["history_steps"],
            "history_pushes": report["run"]["history_pushes"],
            **coverage_figures(report["run"].get("domain_coverage")),
            "uncovered": sum(1 for c in report["clauses"] if c["outcome"] == "untested"),
            "seconds": round(float(report["run"]["duration_s"])), "measured": str(report["run"]["started"])[:10]}


def coverage_figures(coverage: dict[str, Any] | None) -> dict[str, Any]:
    """The domain coverage a run reached (``run.domain_coverage``; none where the spec declares no coverage)."""
    if not coverage or "partitions" not in coverage:
        return {}
    return {"partitions": coverage["partitions"], "partitions_reached": coverage["partitions_reached"],
            "pairs": coverage["pairs"], "pairs_reached": coverage["pairs_reached"]}


def matrix_figures(matrix: dict[str, Any]) -> dict[str, Any]:
    """The kill matrix's summary: its counts, and the mutants the histories alone killed by name (so that a run
    without a matrix still checks the record against the catalog)."""
    mutants = matrix["mutants"]
    alone = sorted(m["name"] for m in mutants if m["status"] == "killed" and m["killed_by"] == ["histories"])
    return {"killed": matrix["killed"], "total": matrix["total"],
            "should": sum(1 for m in mutants if m["breaks"] == "should"),
            "histories_only": len(alone), "histories_alone": alone,
            "seconds": round(float(matrix["seconds"]))}


def catalog_problems(recorded: dict[str, Any], catalog: list[Any]) -> list[str]:
    """Where the recorded mutants' figures disagree with the catalog (``mutants.catalog.MUTANTS``): every mutant
    counted, each killed (tox -e mutants fails otherwise), the should ones counted, and the histories alone
    having killed every mutant the catalog leaves to them (``by="histories"``), and only catalogued mutants."""
    names = {m.name for m in catalog}
    by_histories = {m.name for m in catalog if m.by == "histories"}
    alone = set(recorded["histories_alone"])
    problems = [f"{key}: recorded {recorded[key]}, the catalog gives {want}" for key, want in (
        ("total", len(catalog)), ("killed", len(catalog)),
        ("should", sum(1 for m in catalog if m.breaks == "should")), ("histories_only", len(alone))) if
        recorded[key] != want]
    if by_histories - alone:
        problems.append(f"histories_alone lacks {sorted(by_histories - alone)} (catalogued by=\"histories\")")
    if alone - names:
        problems.append(f"histories_alone names {sorted(alone - names)}, not in the catalog")
    return problems


def default_test_command() -> list[str]:
    """The pytest arguments of the default tox environment: tox.ini's [testenv] command with its default posargs."""
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(TOX_INI, encoding="utf-8")
    commands = [ln.strip() for ln in ini["testenv"]["commands"].splitlines() if ln.strip() and not
                ln.strip().startswith("#")]
    found = re.fullmatch(r"pytest \{posargs:(.*)\}", commands[0]) if len(commands) == 1 else None
    if found is None:
        raise SystemExit(f"figures: {TOX_INI.name} [testenv] commands is not one `pytest {{posargs:...}}`: {commands}")
    return shlex.split(found.group(1))


def junit_counts(path: Path) -> dict[str, int]:
    """passed, skipped, failed (failures and errors) of a pytest JUnit XML file."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    total = {k: sum(int(s.get(k, 0)) for s in suites) for k in ("tests", "skipped", "failures", "errors")}
    failed = total["failures"] + total["errors"]
    return {"passed": total["tests"] - total["skipped"] - failed, "skipped": total["skipped"], "failed": failed}


def time_tests() -> dict[str, Any]:
    """Run the default tox environment's command here, timed; record what it gave in docs/figures.json."""
    args = default_test_command()
    SELF_TESTS_JUNIT.parent.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", *args, f"--junitxml={SELF_TESTS_JUNIT}"], cwd=ROOT,
                          env={**os.environ, "PYTHONHASHSEED": "0"})
    seconds = round(time.monotonic() - started)
    counts = junit_counts(SELF_TESTS_JUNIT)
    if proc.returncode != 0 or counts["failed"]:
        raise SystemExit(f"figures: the self-tests failed (exit {proc.returncode}, {counts}): nothing recorded")
    figures = load_figures_or_empty()
    figures["tox"] = {"command": shlex.join(["pytest", *args]), "seconds": seconds, **counts,
                      "measured": datetime.date.today().isoformat(), "cpus": os.cpu_count(),
                      "load_at_start": round(load, 1)}
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


def load_figures_or_empty() -> dict[str, Any]:
    return load() if FIGURES.exists() else {}


def record() -> dict[str, Any]:
    """The figures of the last runs, read from their files (each must exist)."""
    figures = {"spec": spec_figures(),
               "certify": report_figures(json.loads(REPORT.read_text(encoding="utf-8"))),
               "mutants": matrix_figures(json.loads(KILL_MATRIX.read_text(encoding="utf-8"))),
               "bench": json.loads(BENCH.read_text(encoding="utf-8"))}
    nixl = json.loads(NIXL_CERTIFY.read_text(encoding="utf-8")) if NIXL_CERTIFY.exists() else None
    if nixl is None or nixl.get("profile") != "certify":  # the README states the full profile's ratio only
        nixl = load().get("nixl") if FIGURES.exists() else None
    if nixl is not None:
        figures["nixl"] = nixl
    if FIGURES.exists() and "tox" in load():  # measured by --time-tests, not read from a run's file
        figures["tox"] = load()["tox"]
    FIGURES.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return figures


def block(f: dict[str, Any]) -> str:
    """The README's figures, as a Markdown list."""
    s, c, m, b = f["spec"], f["certify"], f["mutants"], f["bench"]
    not_supported = (f" ({c['not_supported']} test not supported: the may clause for products the documentation "
                     "does not support, which the reference, an emulator, does not declare)" if c["not_supported"] else "")
    lines = [tests_line(f["tox"])] if "tox" in f else []
    lines += [
        f"- `tox -e certify` on the reference backend, push_cache's report (`reports/reference/`; push_blocks' beside "
        f"it): {c['tests']} tests over the {s['clauses']} clauses of release "
        f"{s['release']} ({s['must']} must, {s['should']} should, {s['may']} may), uncovered clauses: "
        f"{c['uncovered'] or 'none'}, verdict {c['verdict']}{not_supported}; **{c['push_calls']:,} `push_cache` "
        f"calls over {c['distinct_layouts']:,} distinct layouts** (printed as `push_cache calls: N, distinct layouts: "
        f"M` and recorded in the report), **{c['histories']} histories of {c['history_steps']:,} steps making "
        f"{c['history_pushes']:,} of those pushes** (printed as `histories: H, steps: S, pushes in histories: P`); "
        + (f"**domain coverage {c['partitions_reached']}/{c['partitions']} partitions, {c['pairs_reached']}/"
           f"{c['pairs']} pairs** of the spec's `coverage:` section (printed as `domain coverage: A/B partitions, "
           "C/D pairs`; an unreached one blocks CERTIFIED); " if "partitions" in c else "") +
        f"the pytest run took {c['seconds']} s on the 2-core development machine (measured {c['measured']}).",
        f"- `tox -e certify -- --backend reference-vendor`: push_cache NOT CERTIFIED on exactly the {s['deviations']} "
        "clauses whose `deviation:` records a vendor departure, each shown beside its failure as a known departure "
        "(`tests/kit/test_vendor_deviations.py`; push_blocks on its own, `tests/kit/test_operation_certify.py`).",
        f"- `tox -e mutants`: {m['killed']}/{m['total']} deliberately broken backends killed in {m['seconds']} s: "
        f"each must mutant is NOT CERTIFIED by a must clause it targets, and the {m['should']} that break only "
        "vendor (`should`) behaviour are killed by being reported `incompatible` on a target (the table's last "
        f"column says `failed` or `incompatible`); {m['histories_only']} of them are killed by the histories alone "
        "(every clause test lets them through; the matrix's \"killed by\" column).",
        f"- `tox -e bench` ({b['mode']} mode, measured {b['measured']}): a push of {b['bulk_mib']} MiB "
        f"({b['bulk_layers']} layers x 2 tensors x {b['bulk_tensor_kib']} KiB) node to node runs at "
        f"{b['ratio_push_to_copyto_pairs']} of `np.copyto` of the same tensor slices and "
        f"{b['ratio_push_to_copyto_one']} of one `np.copyto` of a single buffer; {b['tiny_layers']} layers of 64 "
        f"bytes cost {b['push_us_per_layer']} µs per layer (bare `np.copyto` of the same pairs: "
        f"{b['copyto_us_per_layer']} µs).",
    ]
    if "nixl" in f:
        n = f["nixl"]
        lines.append(
            f"- `python bench/bench_nixl.py --certify` (full profile, measured {n['measured']}): the reference in "
            f"process {n['in_process_s']} s, through the node host with one process per node {n['node_host_s']} s: "
            f"{n['ratio']}x, both {n['verdict']}.")
    return "\n".join(lines) + "\n"


def tests_line(x: dict[str, Any]) -> str:
    """The README's line for the timed default tox run."""
    minutes, seconds = divmod(int(x["seconds"]), 60)
    busy = x["load_at_start"] >= 0.5 * x["cpus"]  # half the cores busy before it started: others shared them
    shared = (f", load average {x['load_at_start']} at its start: other work shared the cores" if busy else "")
    failed = f", {x['failed']} failed" if x["failed"] else ""
    return (f"- `tox` (the self-tests: tox.ini's `{x['command']}`, timed without tox's own setup of its "
            f"environment): {x['passed']:,} passed, {x['skipped']} skipped"
            f"{failed} in {minutes} min {seconds:02d} s of wall time on the {x['cpus']}-core development machine "
            f"(measured {x['measured']}{shared}; `python docs/figures.py --time-tests`).")


def documented() -> str:
    text = README.read_text(encoding="utf-8")
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)].strip("\n") + "\n"


def write(figures: dict[str, Any]) -> None:
    text = README.read_text(encoding="utf-8")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{block(figures)}{END}{tail}", encoding="utf-8")


def load() -> dict[str, Any]:
    return dict(json.loads(FIGURES.read_text(encoding="utf-8")))


if __name__ == "__main__":
    if sys.argv[1:] == ["--record"]:
        record()
    elif sys.argv[1:] == ["--time-tests"]:
        time_tests()
    elif sys.argv[1:] == ["--write"]:
        write(load())
    else:
        sys.stdout.write(block(load()))
