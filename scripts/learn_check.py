#!/usr/bin/env python3
"""Learning sanity check: a few GRPO steps on the tiny model with a rule
reward must raise the reward. Runs the real parts in one process: the dev
server's engine samples (batched, seeded, with logprobs), the trainer trains
a LoRA adapter (or the full model) on the batch, the adapter is saved and
loaded back into the engine (as parley does with vLLM) for the next step.

    python scripts/learn_check.py --model models/tiny --steps 20

Rewards (per completion):
  token: count of --target's token in the completion.
  words: count of tokens that are one of --words (each as " word" and
         "word", first token), a small set with a usable starting rate.
  set:   fraction of completion tokens whose text contains --letters.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from inference.engine import Engine, GenRequest  # noqa: E402
from inference.sampling import SamplingParams  # noqa: E402
from trainer.batch import Batch, Sequence  # noqa: E402
from trainer.loss import LossConfig  # noqa: E402
from trainer.modeling import LoraSettings  # noqa: E402
from trainer.train import TrainConfig, Trainer  # noqa: E402

TASKS = [
    "Two colleagues disagree about credit for a project. Propose a fair split.",
    "A neighbour's tree drops leaves in your garden. What do you do?",
    "Your friend asks you to keep a secret that could hurt someone. What do you owe each?",
    "The report is due Friday but the data arrives Monday. Suggest a plan.",
    "Should a doctor disclose a harmless mistake to a patient?",
    "Two siblings share one car. Propose a schedule both accept.",
    "A team must cut one feature. How should they decide?",
    "Roommates disagree about guests. Find an agreement.",
]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--prompts", type=int, default=4, help="prompts per step")
    p.add_argument("--group-size", type=int, default=8)
    p.add_argument("--max-tokens", type=int, default=24)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--reward", choices=("token", "words", "set"), default="token")
    p.add_argument("--target", default=" agree", help="token reward: this text's first token")
    p.add_argument("--words", default="agree,yes,fair,we,both,share,together,deal,accept,thanks")
    p.add_argument("--letters", default="e", help="set reward: tokens containing this text")
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--lora-r", type=int, default=16)
    p.add_argument("--lora-alpha", type=int, default=32)
    p.add_argument("--lora-target-modules", default="all-linear", help="comma-separated, or all-linear")
    p.add_argument("--full-finetune", action="store_true")
    p.add_argument("--mini-batches", type=int, default=1)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    import torch

    if a.threads:
        torch.set_num_threads(a.threads)
    engine = Engine(a.model, max_model_len=1024, max_num_seqs=256)
    tok = engine.tokenizer
    target_id = tok.encode(a.target, add_special_tokens=False)[0]
    vocab = engine.vocab_size
    if a.reward == "token":
        good = np.zeros(vocab, bool)
        good[target_id] = True
    elif a.reward == "words":
        good = np.zeros(vocab, bool)
        for w in a.words.split(","):
            for variant in (" " + w.strip(), w.strip()):
                good[tok.encode(variant, add_special_tokens=False)[0]] = True
    else:
        good = np.array([a.letters in tok.decode([i]) for i in range(vocab)])

    def reward(ids: list[int]) -> float:
        hits = float(sum(good[i] for i in ids))
        return hits / max(len(ids), 1) if a.reward == "set" else hits

    work = Path(tempfile.mkdtemp(prefix="learn-check-"))
    cfg = TrainConfig(
        run_dir=work,
        model=Path(a.model).resolve(),
        lr=a.lr,
        lora=None if a.full_finetune else LoraSettings(
            r=a.lora_r,
            alpha=a.lora_alpha,
            target_modules="all-linear" if a.lora_target_modules == "all-linear" else a.lora_target_modules.split(","),
        ),
        loss=LossConfig(),
        mini_batches=a.mini_batches,
        quiet=True,
        seed=a.seed,
        max_grad_norm=1.0,
    )
    trainer = Trainer(cfg)
    prompts = [
        tok.encode(tok.apply_chat_template([{"role": "user", "content": t}], tokenize=False, add_generation_prompt=True), add_special_tokens=False)
        for t in TASKS[: a.prompts]
    ]
    adapter: str | None = None
    t_start = time.perf_counter()
    history = []
    for step in range(1, a.steps + 1):
        t0 = time.perf_counter()
        seqs: list[Sequence] = []
        rewards_all = []
        good_prob = []
        for pi, pr in enumerate(prompts):
            req = GenRequest(
                prompt=pr, max_tokens=a.max_tokens, params=SamplingParams(temperature=a.temperature), n=a.group_size,
                seed=a.seed * 100003 + step * 1009 + pi, logprobs=0, skip_special_tokens=False, adapter=adapter,
            )
            choices = engine.generate(req)
            rs = np.array([reward(c.token_ids) for c in choices], np.float32)
            rewards_all.extend(rs.tolist())
            adv = (rs - rs.mean()) / (rs.std() + 1e-6)
            if rs.std() == 0:
                continue  # zero-variance group: dropped
            for c, ad in zip(choices, adv):
                ids = pr + c.token_ids
                mask = [0] * len(pr) + [1] * len(c.token_ids)
                lp = [0.0] * len(pr) + c.logprobs
                seqs.append(
                    Sequence(
                        input_ids=np.array(ids, np.int64), loss_mask=np.array(mask, np.int8),
                        inference_logprobs=np.array(lp, np.float32), advantages=np.array(mask, np.float32) * float(ad),
                        reward=float(ad), temperature=a.temperature,
                    )
                )
        t_sample = time.perf_counter() - t0
        # probability mass of the rewarded tokens right after the prompt (the policy's own view)
        with torch.no_grad():
            m = trainer.model
            logits = m(input_ids=torch.tensor([prompts[0]])).logits[0, -1].float()
            good_prob.append(float(torch.softmax(logits, -1)[torch.from_numpy(good)].sum()))
        t1 = time.perf_counter()
        metrics = {}
        if seqs:
            batch = Batch(step=step, policy_version=step - 1, run_id="learn-check", sequences=seqs)
            metrics = trainer.train_on_batch(batch)
            out = work / f"step-{step:06d}"
            trainer._unwrapped().save_pretrained(str(out)) if not a.full_finetune else None
            if not a.full_finetune:
                name = f"step{step}"
                engine.load_adapter(name, out)
                if adapter is not None:
                    engine.unload_adapter(adapter)
                adapter = name
            else:
                # full fine-tune: copy the weights into the engine's model
                engine.base.load_state_dict(trainer._unwrapped().state_dict())
        t_train = time.perf_counter() - t1
        row = {
            "step": step,
            "reward_mean": float(np.mean(rewards_all)),
            "good_prob_first_token": good_prob[0],
            "trained_sequences": len(seqs),
            "sample_s": round(t_sample, 2),
            "train_s": round(t_train, 2),
            "loss": metrics.get("loss"),
            "approx_kl": metrics.get("approx_kl"),
            "clip_frac": metrics.get("clip_frac"),
        }
        history.append(row)
        print(json.dumps(row), flush=True)
    first = np.mean([h["reward_mean"] for h in history[:3]])
    last = np.mean([h["reward_mean"] for h in history[-3:]])
    print(json.dumps({"summary": True, "reward_first3": float(first), "reward_last3": float(last), "seconds": round(time.perf_counter() - t_start, 1)}))
    engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
