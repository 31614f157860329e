"""The argument parser of the kit's subcommands: a bad option is one line on stderr and exit 2.

argparse's own ``error()`` prints the whole usage block before its message; a vendor's CI log then shows four lines
for one typo, and the README promises one. Subparsers are built from their parent's class, so every subcommand of a
parser made here says it the same way.
"""

from __future__ import annotations

import argparse
from typing import NoReturn

from .exitcodes import USAGE_ERROR


class UsageParser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # one line: what was wrong and where to look; the exit code is the kit's usage error (exitcodes.py)
        self.exit(USAGE_ERROR, f"{self.prog}: {' '.join(message.split())} ({self.prog} --help lists the options)\n")

