"""The training loop: the Trainer (model, optimizer, one GRPO step,
checkpoints) and main(), which parses the command line (config.py) and runs
it.

    python -m parley_trainer --run-dir runs/x --model models/tiny --mode file

Multi-GPU (FSDP through accelerate; only rank 0 talks to the handshake and
writes files, the batch is broadcast to every rank):

    torchrun --nproc-per-node 8 -m parley_trainer --fsdp --run-dir runs/x --model Qwen3-1.7B ...
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from . import crashpoint
from .batch import Batch, BatchError, Sequence, parse_batch, staleness
from .checkpoint import (
    ACCELERATE_STATE_DIR,
    OPTIMIZER_FILE,
    RNG_FILE,
    STATE_FILE,
    ResumePoint,
    begin_checkpoint,
    checkpoint_dir,
    commit_checkpoint,
    done_payload,
    find_resume,
    is_done,
    prune_states,
    read_done,
)
from .config import TrainConfig, build_parser, config_from_args, hparams
from .handshake import FileHandshake, Handshake, HTTPHandshake, Incoming
from .loss import (
    aggregate,
    effective_temperature,
    grpo_token_loss,
    sampler_mismatch,
    token_logprobs,
    token_weights,
)
from .modeling import Policy, PolicyModel, load_policy, trainable_parameters
from .packing import collate, pack_micro_batches
from .reporting import ReportError, Reporters, open_reporters, step_evals, step_scalars
from .reporting import check as check_report_to
from .weight_sync import NCCLSender, sender_from_env

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "vocab.json",
    "merges.txt",
    "generation_config.json",
)


class RankMismatchError(RuntimeError):
    """Trainer ranks that see different run state (each its own run
    directory, say): they would resume from or train different steps."""


def check_ranks_agree(views: list[tuple[int, int, bool]]) -> None:
    """Raise RankMismatchError unless every rank's view is the same; views
    holds, per rank, (the last finished step it resumed after or trained,
    the step it is about to train or -1 before the first batch, whether
    that step's checkpoint has DONE in its run directory)."""
    if len(set(views)) <= 1:
        return
    parts = []
    for rank, (after, step, done) in enumerate(views):
        where = f"after step {after}" if after >= 0 else "with no finished step"
        if step < 0:
            parts.append(f"rank {rank} resumes {where}")
        else:
            what = "skips it (its checkpoint has DONE)" if done else "trains it"
            parts.append(f"rank {rank} is {where}, at step {step}, and {what}")
    raise RankMismatchError(
        "trainer ranks disagree on the step: " + "; ".join(parts) + ". Every rank must see the same run directory "
        "(--run-dir on a volume all nodes share; in HTTP mode rank 0's is the one that counts, so give every rank the same one)"
    )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) + "Z"


class Trainer:
    """The GRPO trainer: owns the model, the optimizer and the run
    directory's checkpoints. One process per rank; rank 0 does all I/O."""

    def __init__(self, cfg: TrainConfig) -> None:
        from accelerate import Accelerator
        from accelerate.utils import set_seed

        self.cfg = cfg
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
        use_cuda = torch.cuda.is_available() if cfg.device == "auto" else cfg.device == "cuda"
        dtype_name = cfg.dtype
        if dtype_name == "auto":
            dtype_name = "bfloat16" if (use_cuda and cfg.lora is not None) else "float32"
        self.param_dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype_name]
        mixed = "bf16" if use_cuda else "no"
        plugin = None
        if cfg.fsdp:
            from accelerate import FullyShardedDataParallelPlugin

            plugin = FullyShardedDataParallelPlugin(
                auto_wrap_policy="transformer_based_wrap",
                state_dict_type="FULL_STATE_DICT",
                use_orig_params=True,
            )
        self.accelerator = Accelerator(cpu=not use_cuda, mixed_precision=mixed, fsdp_plugin=plugin)
        set_seed(cfg.seed)
        self.is_main = self.accelerator.is_main_process
        self.world = self.accelerator.num_processes
        self.rank = self.accelerator.process_index

        self.resume_point: ResumePoint | None = find_resume(cfg.run_dir) if cfg.run_dir else None
        # before anything loads: ranks resuming from different checkpoints
        # would train different models (or hang in a collective)
        self.agree(-1 if self.resume_point is None else self.resume_point.step, -1, False)
        self.sender: NCCLSender | None = None
        if cfg.weight_transfer == "nccl":
            if cfg.lora is not None:
                raise SystemExit("--weight-transfer nccl sends full weights: it needs --full-finetune")
            self.sender = sender_from_env(cfg.run_dir, cfg.nccl_addr, self.log)
        init_from = self.resume_point.path if (self.resume_point and cfg.lora is None) else None
        self.policy: Policy = load_policy(
            cfg.model,
            cfg.lora,
            self.param_dtype,
            need_reference=cfg.loss.beta > 0,
            gradient_checkpointing=cfg.gradient_checkpointing,
            init_weights_from=init_from,
        )
        config = self.policy.model.config
        self.vocab_size = int(config.vocab_size)
        pad = getattr(config, "pad_token_id", None)
        self.pad_id = int(pad) if isinstance(pad, int) else 0
        if cfg.freeze:
            if cfg.lora is not None:
                raise SystemExit("--freeze is for --full-finetune (a LoRA run trains only its adapter)")
            frozen = [n for n, p in self.policy.model.named_parameters() if any(f in n for f in cfg.freeze)]
            if not frozen:
                raise SystemExit(f"--freeze {','.join(cfg.freeze)}: no parameter name holds it")
            for n, p in self.policy.model.named_parameters():
                if n in frozen:
                    p.requires_grad_(False)
        params = trainable_parameters(self.policy.model)
        self.optimizer = torch.optim.AdamW(
            params,
            lr=cfg.lr,
            betas=(cfg.adam_beta1, cfg.adam_beta2),
            eps=cfg.adam_eps,
            weight_decay=cfg.weight_decay,
        )
        self.model, self.optimizer = self.accelerator.prepare(self.policy.model, self.optimizer)
        if self.policy.reference is not None:
            self.policy.reference.to(self.accelerator.device)
        self.model.train()
        self.last_step = -1
        if self.resume_point is not None:
            self._load_resume(self.resume_point)
            self.last_step = self.resume_point.step

    def agree(self, after: int, step: int, done: bool) -> None:
        """Check that every rank has the same view of the step (after, the
        step about to train, its DONE): RankMismatchError naming each
        rank's when not. One rank agrees with itself."""
        view = (after, step, done)
        views = [view]
        if self.world > 1:
            box: list[Any] = [None] * self.world
            torch.distributed.all_gather_object(box, view)
            views = [tuple(v) for v in box]
        check_ranks_agree(views)

    # ---- logging -------------------------------------------------------

    def log(self, event: str, **fields: Any) -> None:
        if not self.is_main:
            return
        line = json.dumps({"time": _now(), "event": event, **fields}, default=str)
        if not self.cfg.quiet:
            print(line, flush=True)
        if self.cfg.log_file is not None:
            self.cfg.log_file.parent.mkdir(parents=True, exist_ok=True)
            with open(self.cfg.log_file, "a", encoding="utf-8") as f:
                f.write(line + "\n")

    # ---- resume --------------------------------------------------------

    def _unwrapped(self) -> PolicyModel:
        model: PolicyModel = self.accelerator.unwrap_model(self.model)
        return model

    def _load_resume(self, rp: ResumePoint) -> None:
        if self.cfg.lora is not None:
            from peft import set_peft_model_state_dict
            from safetensors.torch import load_file

            path = rp.path / "adapter_model.safetensors"
            if not path.exists():
                raise FileNotFoundError(f"resume: {path} is missing")
            sd = load_file(str(path))
            res = set_peft_model_state_dict(self._unwrapped(), sd)
            unexpected = [k for k in getattr(res, "unexpected_keys", []) if "lora_" in k]
            if unexpected:
                raise RuntimeError(f"resume: adapter in {rp.path} does not fit the LoRA settings (unexpected {unexpected[:3]})")
        acc_state = rp.path / ACCELERATE_STATE_DIR
        opt = rp.path / OPTIMIZER_FILE
        if acc_state.is_dir():
            self.accelerator.load_state(str(acc_state))
        elif opt.exists():
            self.optimizer.load_state_dict(torch.load(opt, map_location="cpu", weights_only=True))
        else:
            self.log("warning", message=f"resume: no optimizer state in {rp.path}; AdamW moments start fresh")
        rng = rp.path / RNG_FILE
        if rng.exists():
            state = torch.load(rng, map_location="cpu", weights_only=False)
            torch.set_rng_state(state["torch"])
            np.random.set_state(state["numpy"])
        self.log("resume", step=rp.step, path=str(rp.path))

    # ---- one step ------------------------------------------------------

    def _assign(self, groups: list[list[int]]) -> list[tuple[list[int], bool]]:
        """This rank's micro-batches; every rank gets the same count (ranks
        short of one run a zero-weight dummy, as FSDP needs every rank in
        every forward)."""
        per_rank = -(-len(groups) // self.world) if groups else 0
        mine = groups[self.rank :: self.world]
        out = [(g, False) for g in mine]
        smallest = min(groups, key=len) if groups else []
        while len(out) < per_rank:
            out.append((smallest[:1], True))
        return out

    def _forward_logprobs(self, module: torch.nn.Module, mb: Any, with_entropy: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        out = module(input_ids=mb.input_ids, attention_mask=mb.attention_mask, use_cache=False)
        temp = effective_temperature(mb.temperature, self.cfg.loss.temperature_scaling)
        return token_logprobs(out.logits, mb.input_ids, temp, with_entropy=with_entropy)

    @torch.no_grad()
    def old_logprobs(self, rows: list[Sequence]) -> list[np.ndarray]:
        """The trainer's logprobs of rows before any update of this step (a
        forward without gradient, in micro-batches), per row; 0 where the
        mask is 0. Needed when a step takes several optimizer steps: later
        mini-batches are trained by updated weights."""
        device = self.accelerator.device
        out: list[np.ndarray] = [np.zeros(len(s), dtype=np.float32) for s in rows]
        groups = pack_micro_batches([len(s) for s in rows], self.cfg.micro_batch_tokens)
        zeros = [np.zeros(len(s), dtype=np.float32) for s in rows]
        for g, dummy in self._assign(groups):
            mb = collate([rows[i] for i in g], [zeros[i] for i in g], self.pad_id, zero_weights=dummy).to(device)
            logp, _ = self._forward_logprobs(self.model, mb, with_entropy=False)
            if dummy:
                continue
            lp = (logp * mb.loss_mask).float().cpu().numpy()
            for j, i in enumerate(g):
                out[i] = lp[j, : len(rows[i])].copy()
        if self.world > 1:
            # each rank computed its own micro-batches; every row's values
            # are non-zero on one rank only
            from accelerate.utils import reduce

            flat = torch.from_numpy(np.concatenate(out)).to(device)
            flat = reduce(flat, reduction="sum").cpu().numpy()
            offsets = np.cumsum([0] + [len(s) for s in rows])
            out = [flat[offsets[k] : offsets[k + 1]] for k in range(len(rows))]
        return out

    def accumulate_gradients(
        self,
        rows: list[Sequence],
        sums: dict[str, float],
        maxes: dict[str, float] | None = None,
        old: list[np.ndarray] | None = None,
    ) -> None:
        """Forward and backward over rows (one optimizer step's worth) in
        micro-batches of at most --micro-batch-tokens padded tokens, adding
        to the parameters' .grad; the per-token weights are normalised over
        all of rows, so the gradient does not depend on the packing. old
        holds the trainer's logprobs before the step's first update when
        they were computed apart (several mini-batches); else this forward's
        are (the same weights). Adds the metric sums to sums and maxima to
        maxes."""
        cfg = self.cfg
        device = self.accelerator.device
        need_ref = cfg.loss.beta > 0
        maxes = {} if maxes is None else maxes
        weights = token_weights([s.loss_mask for s in rows], cfg.loss.aggregation, cfg.loss.dr_grpo_max_tokens)
        groups = pack_micro_batches([len(s) for s in rows], cfg.micro_batch_tokens)
        for g, dummy in self._assign(groups):
            mb = collate(
                [rows[i] for i in g],
                [weights[i] for i in g],
                self.pad_id,
                zero_weights=dummy,
                old_logprobs=None if old is None else [old[i] for i in g],
            ).to(device)
            logp, ent = self._forward_logprobs(self.model, mb, with_entropy=True)
            ref = None
            if need_ref:
                with torch.no_grad(), self.policy.reference_mode(self.model) as ref_model:
                    ref, _ = self._forward_logprobs(ref_model, mb, with_entropy=False)
            old_logp = logp.detach() if mb.old_logprobs is None else mb.old_logprobs
            tl = grpo_token_loss(logp, mb.inference_logprobs, mb.advantages, mb.loss_mask, cfg.loss, ref, old_logp=old_logp)
            loss = aggregate(tl.loss, mb.weights)
            # DDP/FSDP average gradients over ranks; the weights are already
            # normalised over the whole step.
            self.accelerator.backward(loss * self.world)
            with torch.no_grad():
                m = mb.loss_mask
                abs_diff, k3 = sampler_mismatch(old_logp, mb.inference_logprobs, m)
                sums["loss"] += float(loss.detach())
                sums["masked_tokens"] += float(m.sum())
                sums["tokens"] += 0.0 if dummy else float(mb.attention_mask.sum())
                sums["sequences"] += 0.0 if dummy else float(mb.input_ids.shape[0])
                sums["ratio"] += float(tl.ratio.sum())
                sums["clip_low"] += float(tl.clipped_low.sum())
                sums["clip_high"] += float(tl.clipped_high.sum())
                sums["approx_kl"] += float(tl.approx_kl.sum())
                sums["entropy"] += float((ent * m).sum()) if ent is not None else 0.0
                sums["advantage"] += float((mb.advantages * m).sum())
                sums["logprob"] += float((logp.detach() * m).sum())
                sums["mismatch_abs"] += float(abs_diff.sum())
                sums["mismatch_k3"] += float(k3.sum())
                maxes["mismatch_abs"] = max(maxes.get("mismatch_abs", 0.0), float(abs_diff.max()))
                if tl.kl_ref is not None:
                    sums["kl_ref"] += float(tl.kl_ref.sum())
                if tl.tis_weight is not None:
                    sums["tis_weight"] += float(tl.tis_weight.sum())
                    sums["tis_capped"] += float(((tl.tis_weight >= cfg.loss.tis_cap) & (m > 0)).sum())

    def _staleness(self, step: int, seqs: list[Sequence]) -> tuple[dict[str, float], list[Sequence]]:
        """The batch's off-policy tokens (staleness: updates between the
        policy that sampled a token and the one trained) and the rows with
        tokens older than --max-token-staleness taken out of the mask."""
        cfg = self.cfg
        st = [staleness(s, step) for s in seqs]
        trained = sum(int(s.loss_mask.sum()) for s in seqs)
        on = [s.loss_mask > 0 for s in seqs]
        total = sum(int(x[o].sum()) for x, o in zip(st, on, strict=True))
        off = sum(int((x[o] > 0).sum()) for x, o in zip(st, on, strict=True))
        m = {
            "staleness_mean": total / max(trained, 1),
            "staleness_max": float(max((int(x.max()) for x in st if x.size), default=0)),
            "off_policy_token_frac": off / max(trained, 1),
        }
        if cfg.max_token_staleness < 0:
            return m, seqs
        kept: list[Sequence] = []
        dropped = 0
        for s, x in zip(seqs, st, strict=True):
            old = (x > cfg.max_token_staleness) & (s.loss_mask > 0)
            t = s
            if old.any():
                dropped += int(old.sum())
                t = dataclasses.replace(s, loss_mask=np.where(old, 0, s.loss_mask).astype(np.int8))
            if t.loss_mask.any():
                kept.append(t)
        m["tokens_dropped_stale"] = float(dropped)
        return m, kept

    def train_on_batch(self, batch: Batch) -> dict[str, float]:
        """One step: --mini-batches optimizer steps over the batch, each
        accumulating gradients over micro-batches of at most
        --micro-batch-tokens padded tokens. Returns the step's metrics."""
        cfg = self.cfg
        t0 = time.perf_counter()
        seqs = batch.sequences
        if not seqs:
            # All groups were dropped upstream: no update, the policy is
            # saved unchanged.
            return {"sequences": 0.0, "tokens": 0.0, "masked_tokens": 0.0, "optimizer_steps": 0.0, "lr": float(cfg.lr), "train_seconds": 0.0, "empty_batch": 1.0}
        stale_metrics, seqs = self._staleness(batch.step, seqs)
        if not seqs:
            return {**stale_metrics, "sequences": 0.0, "tokens": 0.0, "masked_tokens": 0.0, "optimizer_steps": 0.0, "lr": float(cfg.lr), "train_seconds": 0.0, "empty_batch": 1.0}
        order = np.arange(len(seqs))
        if cfg.mini_batches > 1:
            np.random.default_rng(cfg.seed + batch.step).shuffle(order)
        chunks = [c for c in np.array_split(order, max(1, min(cfg.mini_batches, len(seqs)))) if len(c)]
        sums: dict[str, float] = defaultdict(float)
        maxes: dict[str, float] = {}
        grad_norms: list[float] = []
        device = self.accelerator.device
        need_ref = cfg.loss.beta > 0
        self.model.train()
        # With one optimizer step per batch, each forward's own logprobs are
        # the trainer's before the update; with several, they are taken first.
        old_all = self.old_logprobs(seqs) if len(chunks) > 1 else None
        for chunk in chunks:
            rows: list[Sequence] = [seqs[i] for i in chunk]
            self.optimizer.zero_grad(set_to_none=True)
            self.accumulate_gradients(rows, sums, maxes, None if old_all is None else [old_all[i] for i in chunk])
            if cfg.max_grad_norm > 0:
                gn = self.accelerator.clip_grad_norm_(self.model.parameters(), cfg.max_grad_norm)
            else:
                gn = self.accelerator.clip_grad_norm_(self.model.parameters(), float("inf"))
            grad_norms.append(float(gn))
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        if self.world > 1:
            keys = sorted(sums)
            t = torch.tensor([sums[k] for k in keys], dtype=torch.float64, device=device)
            t = self.accelerator.reduce(t, reduction="sum")
            sums = dict(zip(keys, t.tolist()))
            mkeys = sorted(maxes)
            if mkeys:
                mt = torch.tensor([maxes[k] for k in mkeys], dtype=torch.float64, device=device)
                torch.distributed.all_reduce(mt, op=torch.distributed.ReduceOp.MAX)
                maxes = dict(zip(mkeys, mt.tolist()))
        elapsed = time.perf_counter() - t0
        masked = max(sums["masked_tokens"], 1.0)
        metrics = {
            "loss": sums["loss"] / len(chunks),
            "clip_frac_low": sums["clip_low"] / masked,
            "clip_frac_high": sums["clip_high"] / masked,
            "clip_frac": (sums["clip_low"] + sums["clip_high"]) / masked,
            "approx_kl": sums["approx_kl"] / masked,
            "ratio_mean": sums["ratio"] / masked,
            "entropy": sums["entropy"] / masked,
            "logprob_mean": sums["logprob"] / masked,
            "advantage_mean": sums["advantage"] / masked,
            # the sampler/trainer mismatch on trained tokens (trainer's
            # logprobs before the update vs the batch's inference_logprobs)
            "mismatch_logprob_abs_mean": sums["mismatch_abs"] / masked,
            "mismatch_logprob_abs_max": maxes.get("mismatch_abs", 0.0),
            "mismatch_k3_kl": sums["mismatch_k3"] / masked,
            "grad_norm": float(np.mean(grad_norms)) if grad_norms else 0.0,
            "grad_norm_max": float(np.max(grad_norms)) if grad_norms else 0.0,
            "tokens": sums["tokens"],
            "masked_tokens": sums["masked_tokens"],
            "sequences": sums["sequences"],
            "reward_mean": float(np.mean([s.reward for s in seqs])),
            "optimizer_steps": float(len(chunks)),
            "lr": float(cfg.lr),
            "train_seconds": elapsed,
            "tokens_per_second": sums["tokens"] / elapsed if elapsed > 0 else 0.0,
        }
        if need_ref:
            metrics["kl_ref"] = sums["kl_ref"] / masked
        if cfg.loss.tis_cap > 0:
            metrics["tis_weight_mean"] = sums["tis_weight"] / masked
            metrics["tis_capped_frac"] = sums["tis_capped"] / masked
        metrics.update(stale_metrics)
        return metrics

    # ---- checkpoints ---------------------------------------------------

    def save(self, batch: Batch, metrics: dict[str, float]) -> tuple[Path, dict[str, Any]]:
        """Write RUN/checkpoints/step-N/ (adapter or weights, optimizer, RNG),
        then DONE last. Returns the folder and the DONE payload."""
        cfg = self.cfg
        step = batch.step
        fsdp = cfg.fsdp and self.world > 1
        state_dict = self.accelerator.get_state_dict(self.model) if self.world > 1 else None
        tmp = cfg.run_dir / "checkpoints" / f".tmp-step-{step:06d}"
        if self.is_main:
            tmp = begin_checkpoint(cfg.run_dir, step)
        tmp = Path(self._broadcast(str(tmp)))
        final = checkpoint_dir(cfg.run_dir, step)
        done: dict[str, Any] = {}
        if fsdp:
            self.accelerator.save_state(str(tmp / ACCELERATE_STATE_DIR))
        if self.is_main:
            unwrapped = self._unwrapped()
            unwrapped.save_pretrained(str(tmp), state_dict=state_dict, safe_serialization=True)
            if cfg.lora is None:
                for name in TOKENIZER_FILES:
                    src = cfg.model / name
                    if src.exists() and not (tmp / name).exists():
                        shutil.copy2(src, tmp / name)
                write_probe(unwrapped, tmp / PROBE_FILE, self.vocab_size, step, self.accelerator.device)
            if not fsdp:
                torch.save(self.optimizer.state_dict(), tmp / OPTIMIZER_FILE)
            torch.save({"torch": torch.get_rng_state(), "numpy": np.random.get_state()}, tmp / RNG_FILE)
            (tmp / STATE_FILE).write_text(
                json.dumps({"step": step, "batch_policy_version": batch.policy_version, "base_model": str(cfg.model)}) + "\n"
            )
            metrics = dict(metrics)
            t0 = time.perf_counter()
            done = done_payload(step, step, batch.policy_version, metrics, str(final.resolve()))
            commit_checkpoint(cfg.run_dir, step, tmp, done)
            done["metrics"]["save_seconds"] = time.perf_counter() - t0
            prune_states(cfg.run_dir, cfg.keep_optimizer_states, cfg.keep_weights)
        self.accelerator.wait_for_everyone()
        return final, done

    def _broadcast(self, obj: Any) -> Any:
        if self.world == 1:
            return obj
        from accelerate.utils import broadcast_object_list

        box = [obj]
        broadcast_object_list(box, from_process=0)
        return box[0]

    # ---- the loop ------------------------------------------------------

    def should_stop(self) -> bool:
        if self.cfg.exit_when_file:
            p = Path(self.cfg.exit_when_file)
            if not p.is_absolute():
                p = self.cfg.run_dir / p
            return p.exists()
        return False

    def run(self, handshake: Handshake) -> int:
        """Train step after step until --max-steps, the stop file, or no
        more batches. Returns the number of steps trained."""
        cfg = self.cfg
        self.log(
            "start",
            run_dir=str(cfg.run_dir),
            model=str(cfg.model),
            mode=cfg.mode,
            lora=cfg.lora is not None,
            world_size=self.world,
            device=str(self.accelerator.device),
            resume_step=self.last_step,
            report_to=list(cfg.report_to),
        )
        if self.is_main and self.resume_point is not None and cfg.mode == "http":
            # The upload may have been lost in a crash after DONE; a retried
            # upload of a received step is harmless.
            done = read_done(self.resume_point.path) or {}
            handshake.complete(self.resume_point.step, self.resume_point.path, done)
        reporters = Reporters([])
        if self.is_main:
            reporters = open_reporters(cfg.report_to, cfg.run_dir, cfg.tensorboard_dir, hparams(cfg))
        try:
            return self._loop(handshake, reporters)
        finally:
            reporters.close()

    def _between_steps(self) -> bool:
        """Called while waiting for a batch: answers parley's NCCL weight
        requests (--weight-transfer nccl), then says whether to stop."""
        if self.sender is not None:
            self.sender.serve(self._unwrapped(), self.last_step, lambda step: checkpoint_dir(self.cfg.run_dir, step))
        return self.should_stop()

    def _loop(self, handshake: Handshake, reporters: Reporters) -> int:
        cfg = self.cfg
        trained = 0
        while cfg.max_steps <= 0 or trained < cfg.max_steps:
            inc: Incoming | None = None
            if self.is_main:
                self.log("waiting", after=self.last_step)
                inc = handshake.next_batch(self.last_step, self._between_steps)
            inc = self._broadcast(inc)
            if inc is None:
                break
            batch = parse_batch(inc.data, inc.ready, vocab_size=self.vocab_size)
            done_here = is_done(cfg.run_dir, batch.step)
            self.agree(self.last_step, batch.step, done_here)
            if done_here:
                self.log("skip", step=batch.step, reason="checkpoint already has DONE")
                self.last_step = batch.step
                continue
            crashpoint.hit("trainer-batch-loaded", self.rank)  # the batch in hand, nothing trained
            t0 = time.perf_counter()
            metrics = self.train_on_batch(batch)
            final, done = self.save(batch, metrics)
            if self.is_main:
                handshake.complete(batch.step, final, done)
            metrics = dict(done.get("metrics", metrics))
            metrics["step_seconds"] = time.perf_counter() - t0
            self.log("step", step=batch.step, policy_version=batch.step, batch_policy_version=batch.policy_version, **metrics)
            if self.is_main:
                reporters.log(batch.step, step_scalars(metrics, inc.step_metrics))
                reporters.log_eval(step_evals(inc.step_metrics), batch.step)
            self.last_step = batch.step
            trained += 1
        self.log("exit", steps_trained=trained, last_step=self.last_step)
        return trained


PROBE_FILE = "probe.json"
PROBE_TOKENS = 64


def write_probe(model: torch.nn.Module, path: Path, vocab_size: int, step: int, device: torch.device) -> None:
    """Write the full weights' probe beside them: PROBE_TOKENS token ids
    (drawn from the vocabulary, seeded by the step) and the model's logprob
    of each given those before it (temperature 1), which parley compares
    with the server's prompt_logprobs after an update: an end-to-end check
    that the engine computes with these weights, beyond the checksums of
    its parameters (vLLM 0.32's CPU build reloads a tied embedding but keeps
    computing its output head from the old copy)."""
    rng = np.random.default_rng(1_000_003 + step)
    ids = rng.integers(3, vocab_size, size=PROBE_TOKENS)
    was = model.training
    model.eval()
    with torch.no_grad():
        x = torch.tensor(ids[None, :], device=device)
        lp = torch.log_softmax(model(input_ids=x).logits[0].float(), dim=-1)
        tok = lp[:-1].gather(1, x[0, 1:, None])[:, 0]
    model.train(was)
    path.write_text(json.dumps({"token_ids": [int(i) for i in ids], "logprobs": [None, *[float(v) for v in tok.cpu()]]}) + "\n")


def synthetic_batch(vocab_size: int, rows: int, length: int, seed: int = 0) -> Batch:
    """A random batch (prompt half unmasked, completion half masked) for
    --dry-run and benchmarks."""
    rng = np.random.default_rng(seed)
    seqs = []
    for i in range(rows):
        ids = rng.integers(3, vocab_size, size=length)
        mask = np.zeros(length, dtype=np.int8)
        mask[length // 2 :] = 1
        lp = np.where(mask > 0, -np.log(vocab_size) + rng.normal(0, 0.05, size=length), 0.0).astype(np.float32)
        adv = np.where(mask > 0, rng.normal(), 0.0).astype(np.float32)
        seqs.append(Sequence(input_ids=ids, loss_mask=mask, inference_logprobs=lp, advantages=adv, reward=0.0, temperature=1.0, sample_id=str(i)))
    return Batch(step=1, policy_version=0, run_id="dry-run", sequences=seqs)



def make_handshake(cfg: TrainConfig, log: Any) -> Handshake:
    if cfg.mode == "file":
        return FileHandshake(cfg.run_dir, poll_interval=cfg.poll_interval, log=log)
    if not cfg.url:
        raise SystemExit("--url is required in http mode")
    token = os.environ.get(cfg.token_env, "")
    if not token:
        raise SystemExit(f"http mode: environment variable {cfg.token_env} (--token-env) is empty or unset")
    return HTTPHandshake(cfg.url, token, wait=cfg.http_wait, log=log, upload_dir=cfg.run_dir / "checkpoints")


def quiet_libraries() -> None:
    """No hub access (every model is a local folder), no progress bars."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()


def refuse(message: str) -> int:
    """Say why the trainer refuses to go on (stderr) and return its exit
    status, 2. Under torchrun the reason also goes to the rank's error file
    (TORCHELASTIC_ERROR_FILE), so torchrun's closing report, the last lines
    parley shows of a trainer it gave up on, names it rather than an exit
    code."""
    print(f"trainer: {message}", file=sys.stderr, flush=True)
    path = os.environ.get("TORCHELASTIC_ERROR_FILE")
    if path:
        with contextlib.suppress(OSError):
            Path(path).write_text(json.dumps({"message": f"trainer: {message}"}))
    return 2


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    quiet_libraries()
    cfg = config_from_args(a)
    if not (cfg.model / "config.json").is_file():
        # before torch and the model load: a traceback after them names no key
        what = "no such folder" if not cfg.model.exists() else "not a Hugging Face model folder (no config.json)"
        return refuse(f"--model {cfg.model} (parley's trainer.model): {what}")
    try:
        check_report_to(cfg.report_to)  # before the model loads
    except ReportError as e:
        print(f"trainer: {e}", file=sys.stderr)
        return 2
    if a.dry_run:
        cfg.run_dir = Path(os.devnull)
        trainer = Trainer(cfg)
        batch = synthetic_batch(trainer.vocab_size, rows=8, length=64, seed=cfg.seed)
        metrics = trainer.train_on_batch(batch)
        trainer.log("dry_run", **metrics)
        return 0
    cfg.run_dir.mkdir(parents=True, exist_ok=True)
    # parley stops the trainer with SIGTERM: exit through the finally
    # blocks, so the reporters flush and W&B finishes the run (else it
    # shows it as crashed). Checkpoints stay safe: DONE is written last.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        trainer = Trainer(cfg)
        handshake = make_handshake(cfg, lambda msg: trainer.log("info", message=msg))
        try:
            trainer.run(handshake)
        except BatchError as e:
            trainer.log("error", message=f"bad batch: {e}")
            return refuse(f"bad batch: {e}")
        return 0
    except RankMismatchError as e:
        # every rank has every view: each refuses, none waits for the others
        return refuse(str(e))
    finally:
        signal.signal(signal.SIGTERM, previous)
