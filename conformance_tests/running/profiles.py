"""The hypothesis profiles a run may load: ``certify`` (the default, derandomized), ``quick`` and ``explore``."""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

#: the examples per stream a certification needs (the certify profile's); a profile with fewer makes a run partial
CERTIFY_EXAMPLES = 40
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture]
#: reproducible runs: the same examples every time (each stream's seed comes from its clause and key)
DERANDOMIZED = {"derandomize": True, "database": None, "deadline": None, "print_blob": False,
                "phases": [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
                "suppress_health_check": QUIET}
#: the profile a run loads unless --hypothesis-profile names another
DEFAULT = "certify"
NAMES = ("certify", "explore", "quick")
settings.register_profile("certify", max_examples=CERTIFY_EXAMPLES, **DERANDOMIZED)  # type: ignore[arg-type]
# a twentieth of the examples per stream: for slow backends (node processes); never a certification
settings.register_profile("quick", max_examples=2, **DERANDOMIZED)  # type: ignore[arg-type]
settings.register_profile("explore", derandomize=False, deadline=None, max_examples=400, print_blob=True,
                          suppress_health_check=QUIET)
