"""The GRPO loss on tiny hand-made tensors, and on the tiny model."""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
import torch

from helpers import load_model, make_rows
from parley_trainer.batch import Batch, Sequence
from parley_trainer.loss import (
    LossConfig,
    aggregate,
    grpo_token_loss,
    sampler_mismatch,
    tis_weights,
    token_logprobs,
    token_weights,
)


def _masks() -> list[np.ndarray]:
    return [np.array([0, 1, 1, 0], np.int8), np.array([0, 0, 1], np.int8), np.array([0, 0], np.int8)]


@pytest.mark.parametrize(
    "aggregation, max_tokens, want",
    [
        # 3 masked tokens in all: each weighs 1/3.
        ("token_mean", 0, [[0, 1 / 3, 1 / 3, 0], [0, 0, 1 / 3], [0, 0]]),
        # 2 sequences with masked tokens (the all-zero one does not count):
        # 1/(2*2) for sequence 0's two tokens, 1/(2*1) for sequence 1's.
        ("seq_mean_token_mean", 0, [[0, 0.25, 0.25, 0], [0, 0, 0.5], [0, 0]]),
        # Constant = the longest trained span (2): 1/(2*2).
        ("dr_grpo", 0, [[0, 0.25, 0.25, 0], [0, 0, 0.25], [0, 0]]),
        # Constant given: 1/(2*8).
        ("dr_grpo", 8, [[0, 1 / 16, 1 / 16, 0], [0, 0, 1 / 16], [0, 0]]),
    ],
)
def test_token_weights(aggregation, max_tokens, want):
    got = token_weights(_masks(), aggregation, max_tokens)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-6, err_msg=f"token_weights({aggregation}, {max_tokens})")


def test_aggregations_hand_computed():
    # Per-token losses a=1, b=2 (sequence 0), c=4 (sequence 1).
    losses = [np.array([9, 1, 2, 9], np.float32), np.array([9, 9, 4], np.float32), np.array([9, 9], np.float32)]
    want = {
        "token_mean": (1 + 2 + 4) / 3,
        "seq_mean_token_mean": ((1 + 2) / 2 + 4 / 1) / 2,
        "dr_grpo": (1 + 2 + 4) / (2 * 2),
    }
    for agg, value in want.items():
        w = token_weights(_masks(), agg)
        got = sum(float(aggregate(torch.from_numpy(np.where(m > 0, l, 0)), torch.from_numpy(ww))) for m, l, ww in zip(_masks(), losses, w))
        assert got == pytest.approx(value), f"{agg}: {got}, want {value}"


def test_clipped_surrogate_hand_computed():
    cfg = LossConfig(epsilon_low=0.2, epsilon_high=0.28)
    ratio = torch.tensor([[1.5, 0.5, 0.5, 1.5, 1.0, 1.0]])
    adv = torch.tensor([[1.0, -1.0, 1.0, -1.0, 2.0, 3.0]])
    mask = torch.tensor([[1.0, 1, 1, 1, 1, 0]])
    inf = torch.full_like(ratio, -2.0)
    inf[0, 5] = float("nan")  # masked out: must not leak
    logp = inf.nan_to_num(-2.0) + torch.log(ratio)
    tl = grpo_token_loss(logp, inf, adv, mask, cfg)
    want = [-1.28, 0.8, -0.5, 1.5, -2.0, 0.0]
    np.testing.assert_allclose(tl.loss[0].tolist(), want, rtol=1e-5)
    assert tl.clipped_high[0].tolist() == [1, 0, 0, 0, 0, 0]
    assert tl.clipped_low[0].tolist() == [0, 1, 0, 0, 0, 0]
    # approx_kl: ratio - 1 - log ratio
    k = [r - 1 - math.log(r) for r in (1.5, 0.5, 0.5, 1.5, 1.0)] + [0.0]
    np.testing.assert_allclose(tl.approx_kl[0].tolist(), k, rtol=1e-5, atol=1e-7)


def test_k3_kl_to_reference():
    cfg = LossConfig(beta=0.5)
    logp = torch.tensor([[0.0, -1.0, -2.0]])
    ref = torch.tensor([[0.0, -1.5, -2.0]])
    mask = torch.tensor([[0.0, 1.0, 1.0]])
    tl = grpo_token_loss(logp, logp.detach(), torch.zeros_like(logp), mask, cfg, ref_logp=ref)
    d = -0.5
    want_kl = math.exp(d) - d - 1
    np.testing.assert_allclose(tl.kl_ref[0].tolist(), [0.0, want_kl, 0.0], atol=1e-7)
    np.testing.assert_allclose(tl.loss[0].tolist(), [0.0, 0.5 * want_kl, 0.0], atol=1e-7)


def test_masked_positions_get_exactly_zero_gradient():
    torch.manual_seed(0)
    logp = (-torch.rand(2, 5) * 3).requires_grad_(True)
    inf = -torch.rand(2, 5) * 3
    adv = torch.randn(2, 5)
    mask = torch.tensor([[0, 1, 1, 0, 1], [0, 0, 1, 1, 0]], dtype=torch.float32)
    inf[mask == 0] = float("-inf")  # garbage where the mask is 0
    w = torch.from_numpy(np.stack(token_weights([mask[0].numpy(), mask[1].numpy()], "token_mean")))
    loss = aggregate(grpo_token_loss(logp, inf, adv, mask, LossConfig(beta=0.1), ref_logp=logp.detach() - 0.3).loss, w)
    loss.backward()
    assert torch.isfinite(loss)
    assert (logp.grad[mask == 0] == 0).all()
    assert (logp.grad[mask == 1] != 0).all()


def test_token_logprobs_alignment_and_temperature():
    logits = torch.randn(1, 4, 7)
    ids = torch.tensor([[1, 2, 3, 4]])
    lp, ent = token_logprobs(logits, ids, torch.tensor([0.5]), with_entropy=True)
    assert lp[0, 0] == 0 and ent[0, 0] == 0
    want = torch.log_softmax(logits[0, 1] / 0.5, -1)[3]
    assert float(lp[0, 2]) == pytest.approx(float(want), rel=1e-5)
    p = torch.softmax(logits[0, 0] / 0.5, -1)
    assert float(ent[0, 1]) == pytest.approx(float(-(p * p.log()).sum()), rel=1e-4)


def _trainer(model_dir, tmp_path, **kw):
    from parley_trainer.config import TrainConfig
    from parley_trainer.train import Trainer

    cfg = TrainConfig(run_dir=tmp_path, model=model_dir, quiet=True, **kw)
    return Trainer(cfg)


def _batch(rows) -> Batch:
    seqs = [
        Sequence(
            input_ids=np.array(r["input_ids"], np.int64),
            loss_mask=np.array(r["loss_mask"], np.int8),
            inference_logprobs=np.array(r["inference_logprobs"], np.float32),
            advantages=np.array(r["advantages"], np.float32),
            reward=r["reward"],
            temperature=r["temperature"],
        )
        for r in rows
    ]
    return Batch(step=1, policy_version=0, run_id="t", sequences=seqs)


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_on_policy_ratio_is_one(tiny_model, tmp_path, temperature):
    model = load_model(tiny_model)
    rows = make_rows(model, 6, model.config.vocab_size, seed=1, temperature=temperature)
    batch = _batch(rows)
    tr = _trainer(tiny_model, tmp_path, lr=0.0)
    m = tr.train_on_batch(batch)
    adv = np.concatenate([s.advantages[s.loss_mask > 0] for s in batch.sequences])
    assert m["ratio_mean"] == pytest.approx(1.0, abs=1e-4)
    assert m["clip_frac"] == 0.0
    assert m["approx_kl"] == pytest.approx(0.0, abs=1e-6)
    assert m["loss"] == pytest.approx(-float(adv.mean()), abs=1e-4)
    assert m["masked_tokens"] == float(len(adv))


def _grads(tr) -> dict[str, torch.Tensor]:
    return {n: p.grad.detach().clone() for n, p in tr.model.named_parameters() if p.requires_grad and p.grad is not None}


@pytest.mark.parametrize("aggregation", ["token_mean", "seq_mean_token_mean", "dr_grpo"])
def test_gradient_accumulation_equals_one_big_batch(tiny_model, tmp_path, aggregation):
    model = load_model(tiny_model)
    rows = make_rows(model, 7, model.config.vocab_size, seed=2, on_policy=False)
    batch = _batch(rows)
    loss_cfg = LossConfig(aggregation=aggregation)
    # Full fine-tune, so every weight's gradient is compared.
    big = _trainer(tiny_model, tmp_path / "a", micro_batch_tokens=0, loss=loss_cfg, lora=None)
    small = _trainer(tiny_model, tmp_path / "b", micro_batch_tokens=20, loss=loss_cfg, lora=None)
    s1, s2 = defaultdict(float), defaultdict(float)
    big.accumulate_gradients(batch.sequences, s1)
    small.accumulate_gradients(batch.sequences, s2)
    assert s2["masked_tokens"] == s1["masked_tokens"]
    assert s1["loss"] == pytest.approx(s2["loss"], rel=1e-5)
    g1, g2 = _grads(big), _grads(small)
    assert g1.keys() == g2.keys() and len(g1) > 0
    for n in g1:
        torch.testing.assert_close(g1[n], g2[n], rtol=1e-4, atol=1e-7, msg=lambda m: f"{n}: {m}")


def test_masked_out_tokens_do_not_change_the_gradient(tiny_model, tmp_path):
    """Advantages and inference logprobs at mask-0 positions, and a sequence
    with no masked token, leave the gradient unchanged."""
    model = load_model(tiny_model)
    vocab = model.config.vocab_size
    rows = make_rows(model, 4, vocab, seed=3, on_policy=False)
    tr = _trainer(tiny_model, tmp_path, lora=None)
    s = defaultdict(float)
    tr.accumulate_gradients(_batch(rows).sequences, s)
    g_ref = _grads(tr)

    noisy = []
    for r in rows:
        r = dict(r)
        r["advantages"] = [a if m else 100.0 for a, m in zip(r["advantages"], r["loss_mask"])]
        r["inference_logprobs"] = [lp if m else -50.0 for lp, m in zip(r["inference_logprobs"], r["loss_mask"])]
        noisy.append(r)
    extra = dict(rows[0])
    extra["loss_mask"] = [0] * len(extra["input_ids"])
    extra["advantages"] = [5.0] * len(extra["input_ids"])
    noisy.append(extra)
    batch = _batch(noisy)
    # the parser zeroes these columns where the mask is 0; bypass it here
    for seq, r in zip(batch.sequences, noisy):
        seq.advantages = np.array(r["advantages"], np.float32)
        seq.inference_logprobs = np.array(r["inference_logprobs"], np.float32)
    tr.optimizer.zero_grad(set_to_none=True)
    tr.accumulate_gradients(batch.sequences, defaultdict(float))
    g = _grads(tr)
    for n in g_ref:
        torch.testing.assert_close(g[n], g_ref[n], rtol=1e-5, atol=1e-8, msg=lambda m: f"{n}: {m}")


# ---- truncated importance sampling and the sampler/trainer mismatch ------


def test_tis_weights_hand_computed():
    old = torch.tensor([[-1.0, -2.0, -0.5, -3.0]])
    inf = torch.tensor([[-1.5, -1.0, -0.5, float("nan")]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    # exp(0.5) = 1.6487, exp(-1) = 0.3679, exp(0) = 1; masked: 0
    np.testing.assert_allclose(tis_weights(old, inf, mask, 2.0)[0].tolist(), [math.exp(0.5), math.exp(-1), 1.0, 0.0], rtol=1e-6)
    np.testing.assert_allclose(tis_weights(old, inf, mask, 1.5)[0].tolist(), [1.5, math.exp(-1), 1.0, 0.0], rtol=1e-6)


def test_tis_loss_hand_computed():
    """With a cap the ratio is taken against the trainer's old logprobs and
    the clipped surrogate is weighted by min(exp(old - inference), C)."""
    cfg = LossConfig(epsilon_low=0.2, epsilon_high=0.28, tis_cap=2.0)
    old = torch.tensor([[-1.0, -2.0, -0.5, -1.0]])
    inf = torch.tensor([[-1.5, -1.0, -0.5, -9.0]])
    ratio = torch.tensor([[1.5, 0.5, 1.0, 1.0]])
    adv = torch.tensor([[1.0, -1.0, 2.0, 5.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    logp = old + torch.log(ratio)
    tl = grpo_token_loss(logp, inf, adv, mask, cfg, old_logp=old)
    # token 0: -min(1.5*1, 1.28*1) * exp(0.5); token 1: -min(0.5*-1, 0.8*-1) * exp(-1);
    # token 2: -(1*2) * 1; token 3 masked
    want = [-1.28 * math.exp(0.5), 0.8 * math.exp(-1), -2.0, 0.0]
    np.testing.assert_allclose(tl.loss[0].tolist(), want, rtol=1e-5)
    np.testing.assert_allclose(tl.tis_weight[0].tolist(), [math.exp(0.5), math.exp(-1), 1.0, 0.0], rtol=1e-6)
    assert tl.clipped_high[0].tolist() == [1, 0, 0, 0] and tl.clipped_low[0].tolist() == [0, 1, 0, 0]
    # Off (the default), the same inputs take the ratio against the sampler: different loss.
    off = grpo_token_loss(logp, inf, adv, mask, LossConfig())
    assert off.tis_weight is None
    r_inf = torch.exp(logp - inf)[0]
    assert off.ratio[0, 0] == pytest.approx(float(r_inf[0]), rel=1e-6)
    assert off.loss[0, 0] == pytest.approx(-min(float(r_inf[0]), 1.28), rel=1e-5)


def test_tis_on_policy_gradient():
    """One optimizer step per batch (old = logp.detach()): the loss is
    -A * w and its gradient -A * w * d logp, w = min(exp(logp - inference), C)."""
    cfg = LossConfig(tis_cap=1.2)
    logp = torch.tensor([[-1.0, -2.0, -0.7]], requires_grad=True)
    inf = torch.tensor([[-1.3, -1.9, -2.7]])
    adv = torch.tensor([[0.5, -2.0, 1.0]])
    mask = torch.ones_like(inf)
    tl = grpo_token_loss(logp, inf, adv, mask, cfg)
    w = [min(math.exp(0.3), 1.2), math.exp(-0.1), 1.2]
    want = [-a * wi for a, wi in zip([0.5, -2.0, 1.0], w)]
    np.testing.assert_allclose(tl.loss[0].tolist(), want, rtol=1e-5)
    tl.loss.sum().backward()
    np.testing.assert_allclose(logp.grad[0].tolist(), want, rtol=1e-5)


def test_sampler_mismatch_hand_computed():
    trainer = torch.tensor([[-1.0, -2.0, -0.5, -4.0]])
    inf = torch.tensor([[-1.5, -1.0, -0.5, float("nan")]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 0.0]])
    abs_diff, k3 = sampler_mismatch(trainer, inf, mask)
    np.testing.assert_allclose(abs_diff[0].tolist(), [0.5, 1.0, 0.0, 0.0], atol=1e-7)
    # r = trainer - sampler: k3 = exp(r) - 1 - r
    np.testing.assert_allclose(k3[0].tolist(), [math.exp(0.5) - 1.5, math.exp(-1.0), 0.0, 0.0], rtol=1e-6, atol=1e-7)


def _offset_rows(model, offsets_seed: int, scale: float, n: int = 5):
    """On-policy rows whose inference logprobs are moved by known offsets on
    mask-1 tokens: the sampler/trainer mismatch is exactly those offsets."""
    rows = make_rows(model, n, model.config.vocab_size, seed=4)
    rng = np.random.default_rng(offsets_seed)
    deltas = []
    for r in rows:
        lp = np.array(r["inference_logprobs"], np.float64)
        m = np.array(r["loss_mask"]) > 0
        d = rng.uniform(-scale, scale, size=len(lp))
        lp[m] -= d[m]  # trainer - sampler = d
        r["inference_logprobs"] = lp.tolist()
        deltas.append(d[m])
    return rows, np.concatenate(deltas)


@pytest.mark.parametrize("mini_batches", [1, 2])
def test_trainer_reports_mismatch(tiny_model, tmp_path, mini_batches):
    model = load_model(tiny_model)
    rows, d = _offset_rows(model, 7, 0.5)
    # lr > 0: with two mini-batches the second is trained by updated weights,
    # and the mismatch must still be measured against the step's start.
    tr = _trainer(tiny_model, tmp_path, lr=5e-2, mini_batches=mini_batches)
    m = tr.train_on_batch(_batch(rows))
    assert m["mismatch_logprob_abs_mean"] == pytest.approx(float(np.abs(d).mean()), abs=2e-5)
    assert m["mismatch_logprob_abs_max"] == pytest.approx(float(np.abs(d).max()), abs=2e-5)
    assert m["mismatch_k3_kl"] == pytest.approx(float((np.exp(d) - 1 - d).mean()), abs=2e-5)
    assert "tis_weight_mean" not in m


def test_trainer_tis_metrics(tiny_model, tmp_path):
    model = load_model(tiny_model)
    rows, d = _offset_rows(model, 8, 1.0)
    cap = 1.5
    tr = _trainer(tiny_model, tmp_path, lr=0.0, loss=LossConfig(tis_cap=cap))
    m = tr.train_on_batch(_batch(rows))
    w = np.minimum(np.exp(d), cap)
    assert m["tis_weight_mean"] == pytest.approx(float(w.mean()), abs=5e-5)
    assert m["tis_capped_frac"] == pytest.approx(float((np.exp(d) >= cap).mean()), abs=1e-9)
    # the ratio is taken against the trainer's own logprobs: 1 before the update
    assert m["ratio_mean"] == pytest.approx(1.0, abs=1e-5) and m["clip_frac"] == 0.0


def test_cli_tis_cap(tmp_path):
    from parley_trainer.config import build_parser, config_from_args

    base = ["--run-dir", str(tmp_path), "--model", str(tmp_path)]
    assert config_from_args(build_parser().parse_args(base)).loss.tis_cap == 0.0
    assert config_from_args(build_parser().parse_args(base + ["--tis-cap", "2"])).loss.tis_cap == 2.0
    with pytest.raises(SystemExit, match="--tis-cap"):
        config_from_args(build_parser().parse_args(base + ["--tis-cap", "-1"]))
