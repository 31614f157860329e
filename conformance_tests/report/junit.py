"""JUnit XML derived from a report.

Mapping: failed -> <failure>, error -> <error>; flaky (failed, then passed when run again) -> <failure
type="flaky"> at must and may level, where it blocks, and <skipped type="flaky"> at should level, where it does not;
skipped, not_supported, xfailed and incompatible (a should-level miss, not blocking) -> <skipped type="...">; passed
and xpassed -> a plain testcase. Every testcase carries its outcome, level and clauses as properties (and a re-run
test its attempts), so nothing of the report is lost.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from .model import BLOCKING_LEVELS
from .parts import Report, TestRow, TestWaiver, full_run, outcome_count

SKIP_LIKE = ("skipped", "not_supported", "xfailed", "incompatible")


def _blocking_flaky(test: TestRow) -> bool:
    return test["outcome"] == "flaky" and test["level"] in BLOCKING_LEVELS


def _attempts_text(test: TestRow) -> str:
    attempts = test.get("attempts") or []
    return ", ".join(f"{i} {a['outcome']}" for i, a in enumerate(attempts, 1))


def _classname_and_name(test_id: str) -> tuple[str, str]:
    path, sep, name = test_id.partition("::")
    if not sep:
        return "conformance", test_id
    module = path.removesuffix(".py").replace("/", ".").replace("\\", ".")
    if "::" in name:  # class-based tests
        cls, _, name = name.rpartition("::")
        module = f"{module}.{cls.replace('::', '.')}"
    return module, name


def _clean(text: object) -> str:
    """XML 1.0 cannot carry most control characters; replace them."""
    text = "" if text is None else str(text)
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in text)


def _short(message: str | None, outcome: str) -> str:
    first = _clean(message).strip().splitlines()
    return first[0][:300] if first else outcome


def _waiver_properties(waiver: TestWaiver | None) -> list[tuple[str, Any]]:
    if not waiver:
        return []
    return [("waiver.reason", waiver.get("reason") or ""), ("waiver.expires", waiver.get("expires") or "never"),
            ("waiver.match", waiver.get("match") or ""), ("waiver.link", waiver.get("link") or "")]


def to_junit(report: Report) -> str:
    """The report as a JUnit XML document (a string with an XML declaration)."""
    summary = report["summary"]
    blocking_flaky = sum(1 for t in report["tests"] if _blocking_flaky(t))
    other_flaky = sum(1 for t in report["tests"] if t["outcome"] == "flaky") - blocking_flaky
    counts = {
        "tests": str(summary["tests"]),
        "failures": str(summary["failed"] + blocking_flaky),
        "errors": str(summary["error"]),
        "skipped": str(sum(outcome_count(summary, o) for o in SKIP_LIKE) + other_flaky),
        "time": f"{float(report['run'].get('duration_s') or 0):.3f}",
    }
    suite_name = f"{report['suite']['name']} [{report['backend']['name']}]"
    root = ET.Element("testsuites", {"name": suite_name, **counts})
    attrs = {"name": suite_name, **counts}
    if report["run"].get("started"):
        attrs["timestamp"] = str(report["run"]["started"])
    if report["environment"].get("hostname"):
        attrs["hostname"] = str(report["environment"]["hostname"])
    suite = ET.SubElement(root, "testsuite", attrs)
    props = ET.SubElement(suite, "properties")
    verdict = report["verdict"]
    exp = report["expectations"]
    completeness = report.get("completeness") or full_run()
    waived = exp.get("waived") or []
    pairs: list[tuple[str, Any]] = [
        ("verdict", verdict["label"]),
        ("verdict.kind", verdict.get("kind")),
        ("blocking", " ".join(verdict["blocking"])),
        ("compatibility", verdict["compatibility"]),
        ("spec.version", report["spec"]["version"]),
        ("spec.sha256", report["spec"].get("sha256")),
        ("suite.version", report["suite"]["version"]),
        ("backend.name", report["backend"]["name"]),
        ("backend.version", report["backend"].get("version")),
        ("hypothesis.seed", report["run"].get("hypothesis_seed")),
        ("push_calls", report["run"].get("push_calls")),
        ("distinct_layouts", report["run"].get("distinct_layouts")),
        ("histories", report["run"].get("histories")),
        ("history_steps", report["run"].get("history_steps")),
        ("history_pushes", report["run"].get("history_pushes")),
        ("reruns", report["run"].get("reruns")),
        ("flaky", summary.get("flaky", 0)),
        ("run.full", "true" if completeness.get("full", True) else "false"),
        ("expectations.path", exp.get("path")),
        ("expectations.sha256", exp.get("sha256")),
        ("expectations.waived", len(waived)),
        ("expectations.waived_must", len(verdict.get("waived_must_tests") or [])),
    ]
    pairs += [("partial.reason", r) for r in completeness.get("reasons") or []]
    pairs += [("left_out", f"{x['id']} ({x.get('why')})") for x in completeness.get("left_out") or []]
    pairs += [("expectations.expired",
               f"entries[{e['index']}] match={e['match']} outcome={e['outcome']} expired {e.get('expires')}: "
               f"{e.get('reason')}") for e in exp.get("expired") or []]
    for name, value in pairs:
        ET.SubElement(props, "property", {"name": name, "value": _clean("" if value is None else value)})

    for test in report["tests"]:
        classname, name = _classname_and_name(test["id"])
        case = ET.SubElement(
            suite, "testcase", {"classname": classname, "name": name, "time": f"{test['duration_s']:.3f}"}
        )
        tprops = ET.SubElement(case, "properties")
        for pname, pvalue in (
            ("outcome", test["outcome"]),
            ("level", test["level"]),
            ("clauses", " ".join(test["clauses"])),
            ("expected", test["expected"]),
            *([("attempts", _attempts_text(test))] if test.get("attempts") else []),
            *_waiver_properties(test.get("waiver")),
        ):
            ET.SubElement(tprops, "property", {"name": pname, "value": _clean(pvalue)})
        outcome = test["outcome"]
        body = _clean(test.get("message"))
        if outcome == "flaky":
            tries = _attempts_text(test) or "1 flaky (hypothesis ran the failing example again and it passed)"
            body = f"flaky: failed, then passed when run again; attempts: {tries}\n\n{body}"
        if test.get("repro"):
            body += "\n\n# reproduction\n" + _clean(test["repro"])
        hypo = test.get("hypothesis") or {}
        if hypo.get("example"):
            body += f"\n\n# hypothesis example (seed {hypo.get('seed')})\n" + _clean(hypo["example"])
        if outcome == "failed":
            el = ET.SubElement(
                case, "failure", {"type": "failed", "message": _short(test.get("message"), outcome)}
            )
            el.text = body
        elif outcome == "flaky":
            message = f"flaky ({_attempts_text(test) or 'hypothesis replay'}): {_short(test.get('message'), outcome)}"
            el = ET.SubElement(case, "failure" if _blocking_flaky(test) else "skipped",
                               {"type": "flaky", "message": message[:300]})
            el.text = body
        elif outcome == "error":
            el = ET.SubElement(
                case, "error", {"type": "error", "message": _short(test.get("message"), outcome)}
            )
            el.text = body
        elif outcome in SKIP_LIKE:
            detail = _short(test.get("message"), "")
            message = f"{outcome}: {detail}" if detail else outcome
            el = ET.SubElement(case, "skipped", {"type": outcome, "message": message})
            if outcome == "incompatible":
                el.text = body
        elif outcome == "xpassed":
            ET.SubElement(case, "system-out").text = "passed, though expected to fail (xpassed)"
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
