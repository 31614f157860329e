"""The Markdown summary derived from a report."""

from __future__ import annotations

import html

from .model import CLAUSE_OUTCOMES, TEST_OUTCOMES, VerdictKind, seed_text
from .parts import Attempt, Expectations, Report, Run, TestRow, Verdict, full_run, operation_of
from .rerun import failing_tests, first_failure, rerun_command

#: the characters with which a Markdown renderer may start HTML (a tag, an entity): a backend's strings never
#: reach one raw (the HTML page escapes them too)
_HTML = frozenset("<&")


def _cell(value: object, limit: int = 0) -> str:
    text = "" if value is None else " ".join(str(value).split())
    if limit and len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("`", "'")
    return html.escape(text, quote=False) or " "


def _code(value: object) -> str:
    """An inline code span (entities and backslashes stay literal inside a backtick span, so text with a
    character HTML would read is an escaped <code> element instead)."""
    text = "" if value is None else " ".join(str(value).split())
    if _HTML & set(text):
        return "<code>" + html.escape(text, quote=False).replace("|", "&#124;") + "</code>"
    return "`" + (text.replace("`", "'").replace("|", "\\|") or " ") + "`"


def _fence(text: str, lang: str = "python") -> list[str]:
    """A code block: fenced, or an escaped <pre> block when the text holds a character HTML would read."""
    text = text.rstrip("\n")
    if _HTML & set(text):
        return [f"<pre>{html.escape(text, quote=False)}</pre>"]
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}{lang}", text, fence]


def format_compatibility(value: float | None) -> str:
    return "n/a (no should-clause tested)" if value is None else f"{value:.1%}"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


#: a PR comment takes 65,536 characters; the summary stays below it (the HTML page holds everything)
MAX_CHARS = 60_000
#: failures shown with their message, and the first of them shown with their reproduction too
FAILURES_SHOWN = 40
REPROS_SHOWN = 3
#: waived tests the summary lists by name
WAIVERS_SHOWN = 50
#: lines of a failure message shown (its byte diff comes in its first lines)
MESSAGE_LINES = 16


def _message_block(message: object, lines: int = MESSAGE_LINES) -> list[str]:
    text = str(message or "").rstrip()
    if not text:
        return []
    rows = text.splitlines()
    if len(rows) > lines:
        rows = rows[:lines] + [f"… {len(rows) - lines} more lines (index.html has the whole message)"]
    return "\n".join(_fence("\n".join(rows), "")).splitlines()


def _failure_section(title: str, tests: list[TestRow], note: str, *, shown: int = FAILURES_SHOWN,
                     repros: int = REPROS_SHOWN) -> list[str]:
    if not tests:
        return []
    lines = ["", f"## {title} ({len(tests)})", "", note]
    for i, t in enumerate(tests[:shown], 1):
        lines += ["", f"### {i}. {_code(t['id'])}", "",
                  f"**{t['outcome']}**, level {t['level']}; clauses " + ", ".join(_code(c) for c in t["clauses"]), ""]
        if t.get("attempts"):
            lines += [attempts_line(t["attempts"]), ""]
        lines += _message_block(t.get("message"))
        repro = t.get("repro")
        if i <= repros and repro:
            lines += ["", "Reproduction:", ""] + _fence(repro)
        hypo = t.get("hypothesis") or {}
        if i <= repros and hypo.get("example"):
            lines += ["", "Hypothesis minimal example:", ""] + _fence(str(hypo["example"]), "")
    if len(tests) > shown:
        lines += ["", f"… and {len(tests) - shown} more: index.html lists every failure with its reproduction."]
    elif any(t.get("repro") for t in tests[repros:]):
        lines += ["", "index.html has the reproduction of every failure."]
    return lines


def attempts_line(attempts: list[Attempt]) -> str:
    """A re-run test's attempts in order, e.g. "Attempts: 1 failed, 2 passed"."""
    return "Attempts: " + ", ".join(f"{i} {a['outcome']}" for i, a in enumerate(attempts, 1))


def _clauses_line(clauses: list[str], shown: int) -> str:
    more = len(clauses) - shown
    return ", ".join(_code(c) for c in clauses[:shown]) + (f" and {more} more" if more > 0 else "")


def _causes_section(report: Report) -> list[str]:
    causes = report.get("likely_causes") or []
    if not causes:
        return []
    lines = ["## Likely causes", "",
             "The features of the failing pushes that no passing push shares (from the pushes the run recorded), "
             "each with the clauses its tests failed:", ""]
    for i, c in enumerate(causes, 1):
        lines.append(f"{i}. **{_cell(c['statement'])}**. Failed clauses ({len(c['clauses'])}): "
                     + _clauses_line(c["clauses"], len(c["clauses"])))
    return lines + [""]


#: what the first screen shows: the clauses of the cause, the lines of the first failure's message (the clause, the
#: call, what went wrong, the first byte diff)
FIRST_SCREEN_CLAUSES = 5
FIRST_MESSAGE_LINES = 4


def _first_screen(report: Report, location: str | None) -> list[str]:
    """Verdict's next lines for a failing run: the cause in one sentence, the failing call, the re-run command."""
    lines: list[str] = []
    causes = [c for c in report.get("likely_causes") or [] if c.get("predicate")]
    if causes:
        c = causes[0]
        lines += [f"**Likely cause:** {_cell(c['statement'])}.", "",
                  f"Failed with it: {_clauses_line(c['clauses'], FIRST_SCREEN_CLAUSES)}"
                  + (f" ({len(causes) - 1} more cause(s) below)" if len(causes) > 1 else ""), ""]
    first = first_failure(report)
    if first is not None:
        lines += [f"**First failure** ({first['outcome']}) {_code(first['id'])}, its reproduction script under "
                  "Failures below:", ""]
        lines += _message_block(first.get("message"), FIRST_MESSAGE_LINES) + [""]
    command = rerun_command(report, location)
    if command:
        lines += [f"**Re-run only the {len(failing_tests(report))} failing tests:**", ""]
        lines += _fence(command, "sh") + [""]
    return lines


def _blocking_section(report: Report) -> list[str]:
    verdict = report["verdict"]
    lines = ["## Blocking clauses", ""]
    details = report.get("blocking_details")
    if not details:  # a report written before blocking_details existed: the IDs alone
        if not verdict["blocking"]:
            return lines + ["None.", ""]
        return lines + [f"- {_code(cid)} (?) {_cell('')}" for cid in verdict["blocking"]] + [""]
    for d in details:
        count = d.get("failing_tests")
        lines.append(f"- {_code(d['id'])} ({d.get('level') or '?'}"
                     + (f"; {count} failing test{'s' if count != 1 else ''}" if count is not None else "")
                     + f") {_cell(d.get('title') or '')}")
        if d.get("deviation"):
            lines.append(f"  - known departure (the spec records it): {_cell(d['deviation'])}")
        if d.get("first_message"):
            lines += [""] + ["  " + ln for ln in _message_block(d["first_message"], FIRST_MESSAGE_LINES)]
    return lines + [""]


#: how many left-out tests the summary lists by name (report.json lists them all)
LEFT_OUT_SHOWN = 200


#: the sign before the verdict's label, by its kind (certified: ✅; a kind without a sign: ❌)
MARKS = {VerdictKind.CERTIFIED_WITH_WAIVERS: "⚠️", VerdictKind.PARTIAL: "◐"}


def _mark(verdict: Verdict) -> str:
    if verdict["certified"]:
        return "✅"
    kind = verdict.get("kind")
    return MARKS.get(VerdictKind(kind), "❌") if kind in set(VerdictKind) else "❌"


def expectations_line(exp: Expectations) -> str:
    if not exp.get("path"):
        return "none" + (" (--strict-expectations: no waivers allowed)" if exp.get("strict") else "")
    waived = exp.get("waived") or []
    must = sum(1 for w in waived if w.get("level") == "must")
    return (f"{_code(exp['path'])} (sha256 {_code(exp.get('sha256') or 'unknown')}): "
            f"{len(exp.get('entries') or [])} entries, {len(exp.get('expired') or [])} expired, "
            f"{len(waived)} tests waived ({must} must)")


def _counters_line(run: Run, operation: str) -> str:
    calls, layouts = run.get("push_calls"), run.get("distinct_layouts")
    line = (f"{operation} calls: {'n/a' if calls is None else calls}, "
            f"distinct layouts: {'n/a' if layouts is None else layouts}")
    if run.get("histories") is not None:
        line += (f"; histories: {run['histories']}, steps: {run.get('history_steps')}, "
                 f"pushes in histories: {run.get('history_pushes')}")
    return line


def _completeness_section(report: Report) -> list[str]:
    c = report.get("completeness") or full_run()
    if c.get("full", True):
        return []
    lines = ["", "## Partial run", "",
             "This run is not a certification: it did not run every test of the release against the packaged "
             "spec. Its reports are written beside the last full report, never over it.", ""]
    lines += [f"- {_cell(r)}" for r in c.get("reasons") or []]
    counts = c.get("left_out_counts") or {}
    lines += ["", f"Left out: {c.get('left_out_count', 0)} test(s)"
              + (" (" + ", ".join(f"{n} {_cell(why)}" for why, n in sorted(counts.items())) + ")" if counts else "")]
    left = c.get("left_out") or []
    if left:
        lines.append("")
        lines += [f"- {_code(x['id'])} ({_cell(x.get('why'))})" for x in left[:LEFT_OUT_SHOWN]]
        if len(left) > LEFT_OUT_SHOWN:
            lines.append(f"- … and {len(left) - LEFT_OUT_SHOWN} more (listed in report.json)")
    return lines


def _waivers_section(report: Report) -> list[str]:
    exp = report["expectations"]
    if not exp.get("path") and not exp.get("waived"):
        return []
    lines = ["", "## Expectations file (waivers)", "", f"- **File:** {expectations_line(exp)}"]
    expired = exp.get("expired") or []
    if expired:
        lines += ["", f"### Expired entries, ignored ({len(expired)})", ""]
        lines += [f"- entries[{e['index']}] {_code(e['match'])} {e['outcome']}, expired {_cell(e.get('expires'))}: "
                  f"{_cell(e.get('reason'))}" for e in expired]
    waived = exp.get("waived") or []
    if waived:
        lines += ["", f"### Waived tests ({len(waived)})", ""]
        lines += _table(
            ["test", "level", "outcome", "reason", "expires", "entry"],
            [[_code(w["test"]), w["level"], w["outcome"], _cell(w.get("reason")), _cell(w.get("expires") or "never"),
              _cell(w.get("match"))] for w in waived[:WAIVERS_SHOWN]],
        )
        if len(waived) > WAIVERS_SHOWN:
            lines += ["", f"… and {len(waived) - WAIVERS_SHOWN} more (report.json and index.html list them all)."]
    return lines


def to_markdown(report: Report, location: str | None = None) -> str:
    """A human summary whose first screen is the verdict, the likely cause in one sentence, the first failure's call
    and the command that re-runs only the failing tests (``location``: where the report.json lies, as typed);
    then the causes, blocking clauses, failures, the run, the counts and the rest. It fits a PR comment
    (MAX_CHARS)."""
    for shown, repros in ((FAILURES_SHOWN, REPROS_SHOWN), (FAILURES_SHOWN, 0), (15, 0), (5, 0), (0, 0)):
        text = _markdown(report, shown, repros, location)
        if len(text) <= MAX_CHARS:
            return text
    return text[: MAX_CHARS - 80] + "\n\n… cut to fit a PR comment: index.html holds the whole report.\n"


def _markdown(report: Report, shown: int, repros: int, location: str | None) -> str:
    verdict, summary = report["verdict"], report["summary"]
    spec, backend, suite, run = report["spec"], report["backend"], report["suite"], report["run"]
    lines = [
        f"# {operation_of(report)} conformance: {_mark(verdict)} {verdict['label']}",
        "",
        f"Backend {_code(backend['name'])} {_cell(backend.get('version'))}, spec {_cell(spec['version'])}, "
        f"{summary['tests']} tests, {len(report['clauses'])} clauses.",
        "",
    ]
    lines += _first_screen(report, location)
    if verdict.get("reasons"):
        lines += ["Why: " + "; ".join(_cell(r) for r in verdict["reasons"]), ""]
    lines += _causes_section(report)
    lines += _blocking_section(report)
    tests = report["tests"]
    lines += _failure_section(
        "Failures",
        [t for t in tests if t["outcome"] in ("failed", "error")],
        "Must- and may-level violations block certification; should-level ones are listed as incompatibilities.",
        shown=shown, repros=repros,
    )
    lines += _failure_section(
        "Flaky tests",
        [t for t in tests if t["outcome"] == "flaky"],
        "Failed (or errored), then passed when run again. A must or may test that is flaky blocks certification as "
        "a failure does; a should-level one is an incompatibility. The message is the failing attempt's.",
        shown=min(shown, 20), repros=repros,
    )
    lines += _failure_section(
        "Incompatibilities",
        [t for t in tests if t["outcome"] == "incompatible"],
        "Should-level clauses the backend does not meet. They do not block certification.",
        shown=min(shown, 10), repros=0,
    )
    lines += [
        "", "## Run", "",
        f"- **Backend:** {_code(backend['name'])} {_cell(backend.get('version'))}",
        f"- **Spec:** {_cell(spec['version'])} (sha256 {_code(spec.get('sha256') or 'unknown')})",
        f"- **Suite:** {_cell(suite['name'])} {_cell(suite['version'])}",
        f"- **Run:** started {_cell(run.get('started'))}, {float(run.get('duration_s') or 0):.2f} s, "
        f"hypothesis profile {_code(run.get('hypothesis_profile'))}, seed {_cell(seed_text(run))}; "
        + _counters_line(run, operation_of(report)),
        f"- **Expectations:** {expectations_line(report['expectations'])}",
        f"- **Compatibility (should-clauses passed):** {format_compatibility(verdict['compatibility'])}",
    ]
    lines += _completeness_section(report)
    lines += ["", "## Test outcomes", ""]
    lines += _table(
        # summary.get: a report written before an outcome existed (flaky) has no count for it
        ["tests", *TEST_OUTCOMES], [[str(summary["tests"])] + [str(summary.get(o, 0)) for o in TEST_OUTCOMES]]
    )
    clause_counts = {o: 0 for o in CLAUSE_OUTCOMES}
    for clause in report["clauses"]:
        clause_counts[clause["outcome"]] = clause_counts.get(clause["outcome"], 0) + 1
    lines += ["", "## Clause outcomes", ""]
    lines += _table(
        ["clauses", *CLAUSE_OUTCOMES],
        [[str(len(report["clauses"]))] + [str(clause_counts[o]) for o in CLAUSE_OUTCOMES]],
    )
    if verdict.get("no_passing"):
        lines += ["", "## Must clauses with no passing test", "",
                  "Their tests were waived or skipped, none passed, so they block certification:", ""]
        lines += [f"- {_code(cid)}" for cid in verdict["no_passing"]]
    if verdict.get("unchecked"):
        lines += ["", "## Must clauses not checked", "",
                  "None of their tests ran: the backend does not declare a capability they need:", ""]
        lines += [f"- {_code(cid)}" for cid in verdict["unchecked"]]
    lines += _waivers_section(report)
    expectations = report["expectations"]
    if expectations["unmatched"] or expectations["unexpected_passes"]:
        lines += ["", "## Expectations: unmatched entries and unexpected passes", ""]
        lines += [f"- unmatched entry: {_code(x)}" for x in expectations["unmatched"]]
        lines += [f"- unexpected pass: {_code(x)}" for x in expectations["unexpected_passes"]]
    if report.get("warnings"):
        lines += ["", "## Warnings", ""] + [f"- {_cell(w)}" for w in report["warnings"]]
    return "\n".join(lines) + "\n"
