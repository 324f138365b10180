"""Entry point: python -m scripts.trainer (from the repository root)."""

import sys

from .train import main

sys.exit(main())
