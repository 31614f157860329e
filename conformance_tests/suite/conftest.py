"""The suite runs only through the kit's plugin: without it there is no backend, spec or release to run."""

from __future__ import annotations

import pytest

PLUGIN = "conformance_tests.plugin"


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.has_plugin(PLUGIN):
        from conformance_tests.plugin import OUTSIDE_THE_PLUGIN

        raise pytest.UsageError(OUTSIDE_THE_PLUGIN)
