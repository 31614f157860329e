"""The names the plugin uses to run its smoke check, from the modules that hold them (testbed, oracle)."""

from __future__ import annotations

from .oracle import diff as diff_tensors
from .testbed import HarnessError, deep_merge, describe_exception, missing_capabilities
from .testbed import Testbed as World

__all__ = ["HarnessError", "World", "deep_merge", "describe_exception", "diff_tensors", "missing_capabilities"]
