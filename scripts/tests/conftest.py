"""Shared fixtures: a tiny model made once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from parley_tools.tiny_model import make_tiny_model

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny Qwen3 model folder (random weights, seed 0)."""
    out = tmp_path_factory.mktemp("models") / "tiny"
    return make_tiny_model(out, seed=0)
