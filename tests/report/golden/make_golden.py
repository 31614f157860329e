"""Write the golden files of tests/report/test_golden.py: the formats derived from two reports, and the results
site built from both, as the code importable here renders them.

The committed files were made by the code before the typed report model (commit 3769b9b), so that the typed
code is held to the old code's bytes:

    cd <a checkout of that commit> && PYTHONHASHSEED=0 python <this file> <report.json of a reference certification>

The site's hashes (``site.sha256.json``) were made again when the site came to group reports by operation (a grid
per operation, the operation named on the implementation and clause pages, ``operations`` in site.json): from the
same two reports, with ``site_hashes`` of this file; each run's own page and every badge.json kept their bytes.
A clause page shows its clause's note from the packaged spec: the page of push_cache.history.valid_pushes was
hashed again when push_cache's histories came to pull (its note says so), and again when they came to move
blocks alongside (generation.histories.alongside); no other page changed.

``reference.report.json`` is that certification's report (CERTIFIED); ``every.report.json`` is the report the
self-tests' ``every_report`` fixture builds (every outcome, failures, a flaky test, waivers).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).parent
#: where the re-run commands of the pages say report.json lies (a fixed text, not a temporary path)
LOCATION = "reports/reference/report.json"
FORMATS = ("junit.xml", "summary.md", "index.html", "badge.json")


def site_hashes(reports: dict[str, dict]) -> dict[str, str]:
    """sha256 of every page of the site of ``reports`` (by the name each report is read from)."""
    from conformance_tests.report import site, site_model

    runs = [site_model.Run(report, Path(name), order) for order, (name, report) in enumerate(reports.items())]
    pages = site._pages(site_model.implementations(runs))
    return {name: hashlib.sha256(text.encode("utf-8")).hexdigest() for name, text in sorted(pages.items())}


def main(reference: str) -> None:
    sys.path.insert(0, str(HERE.parents[2]))
    from conformance_tests.report.render import derived_texts, dumps
    from tests.report.conftest import every_outcome_rows, make_report

    shutil.copyfile(reference, HERE / "reference.report.json")
    every = make_report(every_outcome_rows(), unmatched=["conformance_tests/suite/test_gone.py::test_x"])
    (HERE / "every.report.json").write_text(dumps(every), encoding="utf-8")
    reports = {}
    for name in ("reference", "every"):
        report = json.loads((HERE / f"{name}.report.json").read_text(encoding="utf-8"))
        reports[f"{name}/report.json"] = report
        for fmt, text in derived_texts(report, LOCATION).items():
            (HERE / f"{name}.{fmt}").write_text(text, encoding="utf-8")
    (HERE / "site.sha256.json").write_text(json.dumps(site_hashes(reports), indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1])
