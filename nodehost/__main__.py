"""``python -m nodehost serve --listen ADDR:PORT``: a node agent (see nodehost.agent)."""

from __future__ import annotations

import sys

from .agent import main

if __name__ == "__main__":
    sys.exit(main())
