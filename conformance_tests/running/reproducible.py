"""What keeps the certify profile's examples the same wherever and whenever it runs.

Derandomized hypothesis seeds each test from its own name, but from 6.131 it also mixes into its draws the
constants it finds in the source of every "local" module imported so far: the kit's, the backend's, the test files'.
Left on, the examples a test draws would depend on which backend is certified, on which modules an earlier test
imported, and on edits to code unrelated to the test, and a report could not be reproduced from what it records. The
kit turns that pool off: generation then depends only on the test, the profile, the seed and the hypothesis version
(which pyproject pins to one minor release and every report records).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import hypothesis


class GenerationNotPinned(RuntimeError):
    """This hypothesis has no local-constants pool where the kit expects it, so the kit cannot promise reproducible
    examples; the message is one line."""


def pin_generation() -> None:
    """Make hypothesis draw from its global constants only (idempotent)."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants
    except ImportError as exc:
        raise GenerationNotPinned(_unsupported(str(exc))) from None
    if not callable(getattr(providers, "_get_local_constants", None)) or not hasattr(providers, "CONSTANTS_CACHE"):
        raise GenerationNotPinned(_unsupported("no hypothesis.internal.conjecture.providers._get_local_constants"))
    if getattr(providers._get_local_constants, "_kit_pinned", False):
        return
    empty = Constants()

    def no_local_constants() -> Constants:
        return empty

    no_local_constants._kit_pinned = True  # type: ignore[attr-defined]
    no_local_constants._kit_original = providers._get_local_constants  # type: ignore[attr-defined]
    providers._get_local_constants = no_local_constants
    # permitted constants computed before the pin may hold local ones
    providers.CONSTANTS_CACHE.cache.clear()


def _unsupported(why: str) -> str:
    return (f"hypothesis {hypothesis.__version__} is outside the range the kit supports (pyproject.toml), so its "
            f"examples cannot be reproduced: {why}")


#: the environment entries of a report that change what a run does: generation (hypothesis), the expected bytes
#: (numpy), collection and order (pytest), and the interpreter; ``report verify`` compares each
VERSIONED = ("python", "hypothesis", "numpy", "pytest")


def run_versions() -> dict[str, str | None]:
    """This process's versions of the libraries in VERSIONED (python is the report's own entry)."""
    from importlib.metadata import PackageNotFoundError, version

    out: dict[str, str | None] = {}
    for name in VERSIONED[1:]:
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover - the kit's own dependencies
            out[name] = None
    return out


def layouts_sha256(layouts: Iterable[str]) -> str:
    """The fingerprint of what a run drew: sha256 of its distinct layouts, sorted (one per line)."""
    return hashlib.sha256("\n".join(sorted(set(layouts))).encode()).hexdigest()
