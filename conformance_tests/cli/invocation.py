"""How ``certify`` calls pytest, and how to get back, from the argv a report records, what the user asked for.

The report keeps pytest's whole argv; ``report verify`` re-runs the certification from the user's part alone, so the
kit's own prefix (which a newer kit may change) is not replayed as if the user had typed it.
"""

from __future__ import annotations

from collections.abc import Sequence

#: arguments every certification run gets (the per-test timeout can be overridden by a later --timeout)
CERTIFY_ARGS = ("-p", "conformance_tests.plugin", "--pyargs", "conformance_tests.suite", "-p", "no:cacheprovider",
                "--timeout=60", "--timeout-method=signal", "--tb=short")
#: certify places the kit's checkout as pytest's rootdir, so test IDs read the same wherever the kit is installed
ROOTDIR = "--rootdir="


def pytest_argv(root: str, args: Sequence[str]) -> list[str]:
    """pytest's argv for ``certify args``: the kit's prefix, the rootdir, then the user's arguments."""
    return [*CERTIFY_ARGS, f"{ROOTDIR}{root}", *args]


def certify_args(argv: Sequence[str]) -> list[str] | None:
    """The user's arguments of a run that ``certify`` started (what followed ``certify`` on its command line, with
    any seed certify added); None when pytest was started some other way."""
    head = len(CERTIFY_ARGS)
    if tuple(argv[:head]) != CERTIFY_ARGS or len(argv) <= head or not argv[head].startswith(ROOTDIR):
        return None
    return list(argv[head + 1:])
