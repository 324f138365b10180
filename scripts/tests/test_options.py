"""The trainer's parser against parley's declaration of it (options.json,
written by ``go generate ./config`` from config/trainer.go): the same flags
on both sides, each flag parley passes parsed as parley writes it, the
choices the same, every aggregation implemented. A flag added to the parser
without its Go declaration, or declared in Go without the parser, fails
here; config's TestTrainerFlagsKeys fails for a trainer.* key without its
flag, and TestTrainerOptionsCurrent for a stale options.json."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from parley_trainer import options
from parley_trainer.config import build_parser, config_from_args
from parley_trainer.loss import token_weights
from parley_trainer.reporting import NONE, TARGETS


def _actions() -> dict[str, argparse.Action]:
    """The parser's flags by their first name (--x of --x/--no-x), help left out."""
    return {a.option_strings[0]: a for a in build_parser()._actions if a.option_strings and a.dest != "help"}


def test_parser_takes_the_declared_flags() -> None:
    parser = set(_actions())
    declared = {f.flag for f in options.FLAGS}
    missing = sorted(parser - declared)
    assert not missing, f"the parser's flags {missing} are not in config/trainer.go's trainerFlags: declare them (no key when parley never passes them), then go generate ./config"
    assert not declared - parser, f"config/trainer.go declares {sorted(declared - parser)}, which the parser lacks"
    assert len(declared) == len(options.FLAGS), "a flag declared twice"


# how each of parley's value types reads back in argparse
_TYPES = {options.FLOAT: float, options.INT: int, options.PATH: Path, options.STR: None}


@pytest.mark.parametrize("flag", [f for f in options.FLAGS if f.passed], ids=lambda f: f.flag)
def test_passed_flag_types(flag: options.Flag) -> None:
    a = _actions()[flag.flag]
    if flag.type == options.SWITCH:
        assert isinstance(a, argparse._StoreTrueAction), f"{flag.flag}: parley passes it bare ({flag.key} true), the parser takes {a}"
    elif flag.type == options.LIST:
        assert a.nargs == "+" and a.type is None, f"{flag.flag}: parley passes one comma list ({flag.key}), the parser takes nargs={a.nargs} type={a.type}"
    else:
        assert flag.type in _TYPES, f"{flag.flag}: unknown type {flag.type!r}"
        assert a.nargs is None and a.type is _TYPES[flag.type], f"{flag.flag}: parley writes a {flag.type} ({flag.key}), the parser reads type={a.type} nargs={a.nargs}"
    if a.choices is not None:
        assert tuple(a.choices) == flag.choices, f"{flag.flag}: parser choices {a.choices}, declared {flag.choices}"


def test_report_targets() -> None:
    # --report-to takes comma lists (reporting.parse_report_to), so its
    # choices are checked there: config.ReportTargets against TARGETS + none
    assert set(options.choices("--report-to")) == {*TARGETS, NONE}


def test_aggregations_implemented() -> None:
    masks = [np.array([0, 1, 1], dtype=np.float32), np.array([1, 0, 0], dtype=np.float32)]
    assert options.AGGREGATIONS, "no aggregations declared"
    for agg in options.AGGREGATIONS:
        w = token_weights(masks, agg)
        assert sum(float(x.sum()) for x in w) > 0, agg


@pytest.mark.parametrize("full_finetune", [False, True])
def test_parley_argv_parses(tmp_path: Path, full_finetune: bool) -> None:
    """An argv with every flag parley passes, each value of its declared type, parses and checks."""
    argv: list[str] = []
    for f in options.FLAGS:
        if not f.passed or (f.flag == "--keep-weights" and not full_finetune):
            continue
        if f.type == options.SWITCH:
            if full_finetune:
                argv.append(f.flag)
            continue
        value = {options.FLOAT: "0.5", options.INT: "0", options.PATH: str(tmp_path)}.get(f.type, f.choices[0] if f.choices else "x")
        argv += [f.flag, value]
    cfg = config_from_args(build_parser().parse_args(argv))
    assert cfg.loss.aggregation == options.AGGREGATIONS[0]
    assert (cfg.lora is None) == full_finetune


def test_parse_declaration() -> None:
    got = options.parse({"flags": [{"flag": "--a", "key": "trainer.a", "type": "int", "choices": ["x"], "handshake": True}, {"flag": "--b"}]})
    assert got == (options.Flag("--a", "trainer.a", "int", ("x",), True), options.Flag("--b"))
    assert got[0].passed and not got[1].passed
    with pytest.raises(KeyError, match="not declared"):
        options.lookup("--nope")
