"""The colours of verdicts and outcomes: one owner for the badge, the report page and the results site (which
had each their copy), handed to the templates through their context.

A verdict's *shade* is its kind, except that CERTIFIED (DECLARED CAPABILITIES) has a shade of its own: it is
certified, but some must clauses could not be checked, and a reader should see that at a glance.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from markupsafe import Markup

from .model import CERTIFIED_DECLARED, LABEL_KIND, VerdictKind
from .parts import Verdict


class Shade(StrEnum):
    CERTIFIED = VerdictKind.CERTIFIED.value
    #: certified, but some must clauses could not be checked: the backend does not declare the capability
    CERTIFIED_DECLARED = "certified_declared"
    CERTIFIED_WITH_WAIVERS = VerdictKind.CERTIFIED_WITH_WAIVERS.value
    PARTIAL = VerdictKind.PARTIAL.value
    NOT_CERTIFIED = VerdictKind.NOT_CERTIFIED.value


def shade_of(verdict: Verdict) -> Shade:
    """The shade of a verdict (a report without ``kind``, written before it existed: the label's kind)."""
    label = verdict["label"]
    kind = verdict.get("kind") or LABEL_KIND.get(
        label, VerdictKind.CERTIFIED if verdict["certified"] else VerdictKind.NOT_CERTIFIED)
    if kind == VerdictKind.CERTIFIED and label == CERTIFIED_DECLARED:
        return Shade.CERTIFIED_DECLARED
    return Shade(kind)


#: the badge's colour per shade, by shields.io's names (https://shields.io/badges/endpoint-badge)
BADGE_COLORS: Mapping[Shade, str] = {
    Shade.CERTIFIED: "brightgreen",
    Shade.CERTIFIED_DECLARED: "yellowgreen",
    Shade.CERTIFIED_WITH_WAIVERS: "yellow",
    Shade.PARTIAL: "lightgrey",
    Shade.NOT_CERTIFIED: "red",
}
#: shields.io's named colours, as the site's implementation page shows the badge
BADGE_HEX: Mapping[str, str] = {"brightgreen": "#4c1", "yellowgreen": "#a4a61d", "yellow": "#dfb317",
                                "lightgrey": "#9f9f9f", "red": "#e05d44"}
#: the grey of a badge colour shields.io does not name
BADGE_HEX_UNKNOWN = "#9f9f9f"

class VerdictClass(StrEnum):
    """The CSS class of a verdict's label on the pages (``.verdict.<class>``)."""

    OK = "ok"
    BAD = "bad"
    WAIVERS = "waivers"
    PARTIAL = "partial"


#: the CSS class of a verdict's label, per shade
VERDICT_CLASS: Mapping[Shade, VerdictClass] = {
    Shade.CERTIFIED: VerdictClass.OK,
    Shade.CERTIFIED_DECLARED: VerdictClass.OK,
    Shade.CERTIFIED_WITH_WAIVERS: VerdictClass.WAIVERS,
    Shade.PARTIAL: VerdictClass.PARTIAL,
    Shade.NOT_CERTIFIED: VerdictClass.BAD,
}
#: each class's background: the outcome colours, and an amber of its own for waivers
CLASS_BACKGROUND: Mapping[VerdictClass, str] = {
    VerdictClass.OK: "var(--passed)", VerdictClass.BAD: "var(--failed)", VerdictClass.WAIVERS: "#bf8700",
    VerdictClass.PARTIAL: "var(--skipped)",
}

#: one colour per test and clause outcome (the report page's CSS variables)
OUTCOME_HEX: Mapping[str, str] = {
    "passed": "#1a7f37", "failed": "#cf222e", "flaky": "#bf3989", "incompatible": "#bc4c00", "xfailed": "#8250df",
    "xpassed": "#0969da", "skipped": "#6e7781", "not_supported": "#8c959f", "error": "#82071e", "untested": "#9a6700",
}
#: the site's: untested is a lighter amber (the grid fills a cell with it, the report page writes text in it), and
#: the grid's absent cells, its lines and its deviation marks have theirs
SITE_HEX: Mapping[str, str] = {**OUTCOME_HEX, "untested": "#d4a72c", "absent": "#eaeef2", "line": "#d0d7de",
                               "deviation": "#6639ba"}
#: the variables of each page's :root rule, a line each
_REPORT_ROWS = (("passed", "failed", "flaky", "incompatible", "xfailed", "xpassed"),
                ("skipped", "not_supported", "error", "untested"))
_SITE_ROWS = (_REPORT_ROWS[0], (*_REPORT_ROWS[1], "absent"), ("line", "deviation"))


def _root_rule(colours: Mapping[str, str], rows: Sequence[Sequence[str]]) -> str:
    lines = [" ".join(f"--{name}:{colours[name]};" for name in row) for row in rows]
    return ":root { " + "\n        ".join(lines) + " }"


def _verdict_rules() -> str:
    rules = [f".verdict.{cls} {{ background: {bg}; }}" for cls, bg in CLASS_BACKGROUND.items()]
    return "\n".join(" ".join(rules[i:i + 2]) for i in range(0, len(rules), 2))


#: what the templates write: the CSS of the report page and of the site (``shades.report_root`` and so on)
TEMPLATE_CONTEXT = {
    "report_root": Markup(_root_rule(OUTCOME_HEX, _REPORT_ROWS)),
    "site_root": Markup(_root_rule(SITE_HEX, _SITE_ROWS)),
    "verdict_rules": Markup(_verdict_rules()),
}
