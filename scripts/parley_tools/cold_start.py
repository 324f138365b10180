"""Cold-start supervised fine-tuning of a model folder on seed 002's moves.

A random-weight model (python -m parley_tools.tiny_model) never writes
`VOTE: YES` or `PROPOSAL: A1 B2 C3 D4 E1`, so a reinforcement learning run
on the five-party game has almost nothing to compare. This module teaches it
the format only: it reads the dialogue sequences a role was given in earlier
rollouts (a rollouts parquet's `sequences` column, the exact tokens the
model saw), replaces each of the role's replies by a move drawn at random,
independently of the prompt — a vote YES or NO with even odds where the
prompt asked for a vote, a package of uniformly random options where it
asked for a proposal — and fine-tunes every weight on those moves. The
result writes well-formed moves but has learned nothing about which move is
good: which votes pay is left to the RL run.

    python -m parley_tools.cold_start --model models/tiny-mp --out models/tiny-mp-cold \\
        --rollouts runs/mp-prompts/rollouts/step-000000.parquet --role g1
"""

from __future__ import annotations

import argparse
import glob
import json
import random
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from parley_trainer.atomic import write_dir

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

# What the game's prompts end with (rollout/multiparty/protocol/render.go).
VOTE_ASK = "End your message with VOTE: YES or VOTE: NO."
PROPOSAL_ASK = "End your message with PROPOSAL:"
# Seed 002's packages: five issues with four options each.
ISSUES = "ABCDE"
OPTIONS = 4
# Where a user turn starts in Qwen3's chat template.
USER_TURN = "<|im_start|>user"
# How many tokens before a reply are decoded to tell what it answers.
ASK_WINDOW = 96


class ColdStartError(ValueError):
    """The rollouts hold nothing to learn from, or are not rollouts files."""


@dataclass(frozen=True)
class Example:
    """One sequence with its moves: input ids and a 0/1 loss mask."""

    input_ids: list[int]
    loss_mask: list[int]


def draw_move(kind: str, rng: random.Random) -> str:
    """A move of the given kind ("vote" or "proposal") drawn at random."""
    if kind == "vote":
        return "VOTE: " + rng.choice(["YES", "NO"])
    return "PROPOSAL: " + " ".join(f"{i}{rng.randint(1, OPTIONS)}" for i in ISSUES)


def segments(mask: list[int]) -> list[tuple[int, int]]:
    """The [start, end) runs of ones in a loss mask."""
    out: list[tuple[int, int]] = []
    start = -1
    for i, m in enumerate(mask):
        if m and start < 0:
            start = i
        elif not m and start >= 0:
            out.append((start, i))
            start = -1
    if start >= 0:
        out.append((start, len(mask)))
    return out


def last_user_turn(text: str) -> str:
    """The text from the last user turn's start marker on (all of text when
    it holds none)."""
    at = text.rfind(USER_TURN)
    return text if at < 0 else text[at:]


def rewrite(ids: list[int], mask: list[int], tokenizer: PreTrainedTokenizerBase, eos_id: int, rng: random.Random) -> Example | None:
    """Replace each reply of a sequence by a random move of the kind its
    prompt asked for, ended by eos; replies to other prompts are dropped
    from the loss. None when the sequence asks for no move."""
    out_ids: list[int] = []
    out_mask: list[int] = []
    pos = 0
    moves = 0
    for start, end in segments(mask):
        out_ids += ids[pos:start]
        out_mask += [0] * (start - pos)
        window = tokenizer.decode(ids[max(0, start - ASK_WINDOW) : start])
        assert isinstance(window, str)  # one sequence decodes to one string
        ask = last_user_turn(window)
        kind = "vote" if VOTE_ASK in ask else "proposal" if PROPOSAL_ASK in ask else ""
        if kind:
            move = tokenizer.encode(draw_move(kind, rng), add_special_tokens=False) + [eos_id]
            out_ids += move
            out_mask += [1] * len(move)
            moves += 1
        else:
            out_ids += ids[start:end]
            out_mask += [0] * (end - start)
        pos = end
        # The template closes a reply cut off by max_tokens with eos; the
        # move already carries one.
        if kind and pos < len(ids) and ids[pos] == eos_id:
            pos += 1
    out_ids += ids[pos:]
    out_mask += [0] * (len(ids) - pos)
    return Example(out_ids, out_mask) if moves else None


def read_examples(paths: list[str], role: str, tokenizer: PreTrainedTokenizerBase, eos_id: int, seed: int) -> list[Example]:
    """The role's dialogue sequences from rollouts parquet files, rewritten."""
    import pyarrow.parquet as pq

    rng = random.Random(seed)
    out: list[Example] = []
    for path in paths:
        try:
            table = pq.read_table(path, columns=["sequences"])
        except Exception as e:  # pyarrow raises several types
            raise ColdStartError(f"read rollouts {path}: {e}") from e
        for seqs in table.column("sequences").to_pylist():
            for s in seqs:
                if s["role"] != role or s["kind"] != "dialogue":
                    continue
                ex = rewrite(s["input_ids"], s["loss_mask"], tokenizer, eos_id, rng)
                if ex is not None:
                    out.append(ex)
    if not out:
        raise ColdStartError(f"no {role!r} dialogue asking for a vote or a proposal in {paths}")
    return out


def fine_tune(model: PreTrainedModel, examples: list[Example], epochs: int, lr: float, seed: int) -> list[float]:
    """Fine-tune every weight on the examples' masked tokens, one sequence a
    step; return the mean loss of each epoch."""
    import torch

    torch.manual_seed(seed)
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    model.train()
    losses: list[float] = []
    for _ in range(epochs):
        order = list(range(len(examples)))
        rng.shuffle(order)
        total = 0.0
        for i in order:
            ex = examples[i]
            ids = torch.tensor([ex.input_ids])
            labels = torch.tensor([[t if m else -100 for t, m in zip(ex.input_ids, ex.loss_mask)]])
            loss = model(input_ids=ids, labels=labels).loss
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            total += float(loss.detach())
        losses.append(total / len(examples))
    model.eval()
    return losses


def yes_rate(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, examples: list[Example]) -> tuple[float, int]:
    """What the model prefers at a vote: its probability of YES against NO
    after "VOTE:" at each vote of the examples, averaged, and the number of
    votes."""
    import torch

    yes = tokenizer.encode("VOTE: YES", add_special_tokens=False)
    no = tokenizer.encode("VOTE: NO", add_special_tokens=False)
    common = 0
    while common < min(len(yes), len(no)) and yes[common] == no[common]:
        common += 1
    total, n = 0.0, 0
    with torch.no_grad():
        for ex in examples:
            logits = model(input_ids=torch.tensor([ex.input_ids])).logits[0]
            for start, _ in segments(ex.loss_mask):
                if ex.input_ids[start : start + common] != yes[:common]:
                    continue
                at = start + common - 1
                p = torch.softmax(logits[at], dim=-1)
                py, pn = float(p[yes[common]]), float(p[no[common]])
                total += py / max(py + pn, 1e-12)
                n += 1
    return (total / n if n else 0.0), n


def save(model: PreTrainedModel, src: Path, out: Path) -> None:
    """Write the model's weights with the source folder's other files
    (tokenizer, chat template, configs) to out, atomically."""

    def fill(tmp: Path) -> None:
        for f in src.iterdir():
            if f.is_file() and not f.name.endswith(".safetensors"):
                shutil.copy2(f, tmp / f.name)
        model.save_pretrained(tmp, safe_serialization=True)

    write_dir(out, fill)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="model folder to start from")
    p.add_argument("--out", required=True, help="output model folder (replaced if it exists)")
    p.add_argument("--rollouts", nargs="+", required=True, help="rollouts parquet files or globs")
    p.add_argument("--role", default="g1", help="the role whose sequences are learned from (default g1)")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-sequences", type=int, default=256, help="at most this many sequences (0: all)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    a = p.parse_args(argv)

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    paths: list[str] = []
    for pat in a.rollouts:
        found = sorted(glob.glob(pat))
        if not found:
            print(f"cold_start: --rollouts {pat}: no such file", file=sys.stderr)
            return 1
        paths += found
    src = Path(a.model)
    if not (src / "config.json").is_file():
        print(f"cold_start: --model {src}: no config.json (not a model folder)", file=sys.stderr)
        return 1
    tokenizer = AutoTokenizer.from_pretrained(src)
    eos_id = tokenizer.eos_token_id
    try:
        examples = read_examples(paths, a.role, tokenizer, eos_id, a.seed)
    except ColdStartError as e:
        print(f"cold_start: {e}", file=sys.stderr)
        return 1
    random.Random(a.seed).shuffle(examples)
    held = examples[: max(1, len(examples) // 10)]
    train = examples[len(held) :] or held
    if a.max_sequences > 0:
        train = train[: a.max_sequences]
    model = AutoModelForCausalLM.from_pretrained(src, dtype=torch.float32)
    before, votes = yes_rate(model, tokenizer, held)
    losses = fine_tune(model, train, a.epochs, a.lr, a.seed)
    after, _ = yes_rate(model, tokenizer, held)
    save(model, src, Path(a.out))
    print(json.dumps({
        "model": str(Path(a.out).resolve()),
        "sequences": len(train),
        "held_out": len(held),
        "epoch_loss": [round(x, 4) for x in losses],
        "held_out_votes": votes,
        "p_yes_before": round(before, 4),
        "p_yes_after": round(after, 4),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
