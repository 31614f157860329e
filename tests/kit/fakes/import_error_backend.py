"""Fake backend module that cannot be imported (its vendor package is missing)."""

import vendor_runtime_that_is_not_installed  # noqa: F401

backend = None
