"""Entry point of the trainer: python -m parley_trainer (also under torchrun -m)."""

import sys

from .train import main

sys.exit(main())
