#!/usr/bin/env python3
"""Entry point of the GRPO trainer: python scripts/train.py --help.

Same as `python -m scripts.trainer` (run from the repository root); this form
also works under torchrun: torchrun --nproc-per-node N scripts/train.py ...
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from trainer.train import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
