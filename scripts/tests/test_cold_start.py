"""Cold-start fine-tuning: moves replace the role's replies, the model learns
the format and not a preference."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from parley_tools.cold_start import (
    PROPOSAL_ASK,
    VOTE_ASK,
    ColdStartError,
    draw_move,
    main,
    read_examples,
    rewrite,
    segments,
)

PROPOSAL_RE = re.compile(r"^PROPOSAL: A[1-4] B[1-4] C[1-4] D[1-4] E[1-4]$")


@pytest.fixture(scope="module")
def tok(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model))


def turn(tok, text: str) -> list[int]:
    return tok.encode(text, add_special_tokens=False)


def dialogue(tok, seed: int) -> tuple[list[int], list[int]]:
    """A role's dialogue sequence as the game renders it: a proposal asked
    and answered (cut off at max_tokens, so the template closes it with
    eos), a vote asked and answered (ended by the sampled eos), and a reply
    to something else."""
    rng = random.Random(seed)
    eos = tok.eos_token_id
    ids: list[int] = []
    mask: list[int] = []

    def add(text: str, m: int) -> None:
        t = turn(tok, text)
        ids.extend(t)
        mask.extend([m] * len(t))

    gen = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    add(f"<|im_start|>system\nYou are Party E, round {rng.randint(1, 6)}.<|im_end|>\n", 0)
    add(f"<|im_start|>user\nYour turn. {PROPOSAL_ASK} and one option for each issue (A to E).<|im_end|>\n{gen}", 0)
    add("harbour plan fair offer " * rng.randint(1, 3), 1)
    ids.append(eos)
    mask.append(0)
    add(f"\n<|im_start|>user\nParty A proposes A1 B2 C3 D4 E1. {VOTE_ASK}<|im_end|>\n{gen}", 0)
    add("maybe", 1)
    ids.append(eos)
    mask.append(1)
    add(f"\n<|im_start|>user\nSay something.<|im_end|>\n{gen}", 0)
    add("hello there", 1)
    return ids, mask


def write_rollouts(path: Path, seqs: list[tuple[str, list[int], list[int]]]) -> None:
    """A rollouts parquet with its sequences column only, one row a sequence."""
    rows = [[{"role": r, "kind": "dialogue", "input_ids": i, "loss_mask": m, "logprobs": [0.0] * len(i)}] for r, i, m in seqs]
    pq.write_table(pa.table({"sequences": rows}), path)


def test_segments() -> None:
    assert segments([0, 1, 1, 0, 1, 0, 0, 1]) == [(1, 3), (4, 5), (7, 8)]
    assert segments([0, 0]) == []


def test_draw_move_formats() -> None:
    rng = random.Random(1)
    votes = [draw_move("vote", rng) for _ in range(200)]
    assert set(votes) == {"VOTE: YES", "VOTE: NO"}
    assert 60 < votes.count("VOTE: YES") < 140
    props = [draw_move("proposal", rng) for _ in range(50)]
    assert all(PROPOSAL_RE.match(p) for p in props), props[:3]
    assert len(set(props)) > 40


def test_rewrite_replaces_replies_with_moves(tok) -> None:
    ids, mask = dialogue(tok, 0)
    eos = tok.eos_token_id
    ex = rewrite(ids, mask, tok, eos, random.Random(0))
    assert ex is not None and len(ex.input_ids) == len(ex.loss_mask)
    moves = [tok.decode(ex.input_ids[s:e]) for s, e in segments(ex.loss_mask)]
    assert len(moves) == 2, moves
    assert PROPOSAL_RE.match(moves[0].removesuffix("<|im_end|>")), moves[0]
    assert moves[1] in ("VOTE: YES<|im_end|>", "VOTE: NO<|im_end|>"), moves[1]
    text = tok.decode(ex.input_ids)
    # The old replies are gone, eos is not doubled, the unasked reply stays
    # (outside the loss) and the prompts are kept as they were.
    assert "harbour plan" not in text and "maybe" not in text
    assert "<|im_end|><|im_end|>" not in text
    assert text.endswith("hello there")
    assert text.count(VOTE_ASK) == 1 and text.count(PROPOSAL_ASK) == 1


def test_rewrite_without_moves(tok) -> None:
    ids = turn(tok, "<|im_start|>user\nSay something.<|im_end|>\n<|im_start|>assistant\nhi")
    mask = [0] * (len(ids) - 1) + [1]
    assert rewrite(ids, mask, tok, tok.eos_token_id, random.Random(0)) is None


def test_read_examples_keeps_the_role(tok, tmp_path: Path) -> None:
    ids, mask = dialogue(tok, 1)
    path = tmp_path / "r.parquet"
    write_rollouts(path, [("g1", ids, mask), ("hb1", ids, mask)])
    assert len(read_examples([str(path)], "g1", tok, tok.eos_token_id, 0)) == 1
    with pytest.raises(ColdStartError, match="'g2'"):
        read_examples([str(path)], "g2", tok, tok.eos_token_id, 0)
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ColdStartError, match="bad.parquet"):
        read_examples([str(bad)], "g1", tok, tok.eos_token_id, 0)


def test_main_learns_the_format_at_even_odds(tiny_model: Path, tok, tmp_path: Path, capsys) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    path = tmp_path / "r.parquet"
    write_rollouts(path, [("g1", *dialogue(tok, s)) for s in range(40)])
    out = tmp_path / "cold"
    rc = main(["--model", str(tiny_model), "--out", str(out), "--rollouts", str(path), "--epochs", "3", "--lr", "3e-3"])
    assert rc == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["epoch_loss"][-1] < report["epoch_loss"][0] / 2, report
    assert report["held_out_votes"] == 4
    assert 0.2 < report["p_yes_after"] < 0.8, report
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja"):
        assert (out / name).is_file(), name
    # The saved model writes a well-formed vote where a vote is asked for.
    model = AutoModelForCausalLM.from_pretrained(out)
    ids, mask = dialogue(tok, 99)
    at = segments(mask)[1][0]
    got = model.generate(torch.tensor([ids[:at]]), max_new_tokens=16, do_sample=False)
    reply = tok.decode(got[0][at:], skip_special_tokens=True)
    assert reply in ("VOTE: YES", "VOTE: NO"), reply


def test_main_bad_input(tiny_model: Path, tmp_path: Path, capsys) -> None:
    assert main(["--model", str(tiny_model), "--out", str(tmp_path / "o"), "--rollouts", str(tmp_path / "none-*.parquet")]) == 1
    assert "none-*.parquet: no such file" in capsys.readouterr().err
    path = tmp_path / "r.parquet"
    write_rollouts(path, [])
    assert main(["--model", str(tmp_path), "--out", str(tmp_path / "o"), "--rollouts", str(path)]) == 1
    assert "no config.json" in capsys.readouterr().err
