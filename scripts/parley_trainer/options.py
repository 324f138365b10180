"""The trainer's command line as parley declares it: options.json, which
``go generate ./config`` writes from config/trainer.go (do not edit it).

Each flag names the config key parley fills it from (none for the flags
parley leaves to this trainer's defaults and ``trainer.extra_args``), how
parley writes its value, and the values the trainer accepts. The parser
(config.py) takes its choices from here, so the aggregations, handshake
modes and weight transfers are spelled once, in Go; tests/test_options.py
checks that the parser takes exactly these flags, with matching types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

OPTIONS_FILE = "options.json"

# How parley writes a flag's value (config.TrainerFlagType).
FLOAT = "float"
INT = "int"
STR = "str"
PATH = "path"
LIST = "list"  # one comma list
SWITCH = "switch"  # the bare flag, or nothing


@dataclass(frozen=True)
class Flag:
    """One flag of the trainer (config.TrainerFlag)."""

    flag: str
    # the config key parley fills it from; "" when parley never passes it
    key: str = ""
    # how parley writes the value (FLOAT, INT, ...); "" when it never passes it
    type: str = ""
    choices: tuple[str, ...] = ()
    # added by parley's train.Run once the HTTP handshake server listens
    handshake: bool = False

    @property
    def passed(self) -> bool:
        """Whether parley passes this flag (it has a config key)."""
        return self.key != ""


def parse(data: dict[str, Any]) -> tuple[Flag, ...]:
    """The flags of an options.json document."""
    return tuple(
        Flag(
            flag=str(f["flag"]),
            key=str(f.get("key", "")),
            type=str(f.get("type", "")),
            choices=tuple(str(c) for c in f.get("choices", ())),
            handshake=bool(f.get("handshake", False)),
        )
        for f in data["flags"]
    )


def load() -> tuple[Flag, ...]:
    """The flags of the options.json shipped with this package."""
    text = resources.files(__package__).joinpath(OPTIONS_FILE).read_text(encoding="utf-8")
    return parse(json.loads(text))


FLAGS = load()


def lookup(flag: str) -> Flag:
    """The declared flag named flag ("--aggregation"); KeyError if none."""
    for f in FLAGS:
        if f.flag == flag:
            return f
    raise KeyError(f"{flag} is not declared in {OPTIONS_FILE} (config/trainer.go's trainerFlags; go generate ./config)")


def choices(flag: str) -> tuple[str, ...]:
    """The values the trainer accepts for flag, as parley declares them."""
    return lookup(flag).choices


# trainer.aggregation's values: the loss aggregations (loss.py implements each)
AGGREGATIONS = choices("--aggregation")
