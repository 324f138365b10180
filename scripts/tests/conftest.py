"""Shared fixtures: a tiny model made once per session, helpers to build
batches from it."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(SCRIPTS))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
warnings.filterwarnings("ignore", category=FutureWarning)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: slower than a few seconds (deselect with -m 'not slow')")
    config.addinivalue_line("filterwarnings", "ignore::FutureWarning")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen3 model folder (random weights, seed 0)."""
    from make_tiny_model import make_tiny_model

    out = tmp_path_factory.mktemp("models") / "tiny"
    return make_tiny_model(out, seed=0)
