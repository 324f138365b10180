"""The trainer's configuration: TrainConfig (everything the trainer is
told on its command line) and the command line that fills it.

    python -m parley_trainer --help

build_parser() is the CLI (its flags are parley's trainer.* config keys and
trainer_args); config_from_args() checks the parsed flags and turns them into
a TrainConfig. The train loop (train.py) reads only the TrainConfig.

Which flags parley passes, from which keys, and the choices of --mode,
--aggregation and --weight-transfer are declared in Go (config/trainer.go)
and read from options.json (options.py); tests/test_options.py fails when
this parser and that declaration disagree.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .loss import LossConfig
from .modeling import LoraSettings
from .options import AGGREGATIONS, choices
from .reporting import DEFAULT as DEFAULT_REPORT_TO
from .reporting import ReportError, parse_report_to


@dataclass
class TrainConfig:
    """Everything the trainer is told on its command line."""

    run_dir: Path
    model: Path
    mode: str = "file"
    url: str = ""
    token_env: str = "PARLEY_TRAINER_TOKEN"
    poll_interval: float = 1.0
    http_wait: float = 25.0
    max_steps: int = 0
    exit_when_file: str | None = None
    loss: LossConfig = field(default_factory=LossConfig)
    lr: float = 1e-5
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_eps: float = 1e-8
    max_grad_norm: float = 1.0
    mini_batches: int = 1
    micro_batch_tokens: int = 4096
    lora: LoraSettings | None = field(default_factory=LoraSettings)
    device: str = "auto"
    dtype: str = "auto"
    gradient_checkpointing: bool = False
    fsdp: bool = False
    seed: int = 0
    threads: int = 0
    # resume state (optimizer.pt, rng.pt, accelerate_state/) kept in this
    # many newest checkpoints (0: all)
    keep_optimizer_states: int = 2
    # full fine-tune: weights kept in this many newest checkpoints (0: all)
    keep_weights: int = 0
    # tokens sampled more than this many updates ago get no gradient (-1: all kept)
    max_token_staleness: int = -1
    # full fine-tune: parameters whose name holds one of these stay frozen
    freeze: tuple[str, ...] = ()
    # full weights (--full-finetune): how they reach vLLM besides the
    # checkpoint on disk: "disk" (parley reloads them) or "nccl" (this
    # trainer broadcasts them when parley asks: weight_sync.py)
    weight_transfer: str = "disk"
    nccl_addr: str = ""
    log_file: Path | None = None
    quiet: bool = False
    # where step metrics go (reporting.py): tensorboard, wandb; () for none
    report_to: tuple[str, ...] = DEFAULT_REPORT_TO
    # TensorBoard's folder (None: RUN/tensorboard)
    tensorboard_dir: Path | None = None


def hparams(cfg: TrainConfig) -> dict[str, Any]:
    """The trainer's settings as plain values (W&B's run config)."""
    out: dict[str, Any] = {}
    for k, v in dataclasses.asdict(cfg).items():
        out[k] = str(v) if isinstance(v, Path) else v
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m parley_trainer",
        description="parley's GRPO trainer (file or HTTP handshake).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    g = p.add_argument_group("run")
    g.add_argument("--run-dir", type=Path, help="run directory (batches/, checkpoints/); in http mode the local work directory")
    g.add_argument("--model", type=Path, required=True, help="base model folder (Hugging Face format)")
    g.add_argument("--mode", choices=choices("--mode"), default="file")
    g.add_argument("--url", default="", help="handshake base URL (http mode)")
    g.add_argument("--token-env", default="PARLEY_TRAINER_TOKEN", help="environment variable holding the bearer token (http mode)")
    g.add_argument("--poll-interval", type=float, default=1.0, help="seconds between looks at batches/ (file mode)")
    g.add_argument("--http-wait", type=float, default=25.0, help="long-poll wait of /v1/batches/next (http mode)")
    g.add_argument("--max-steps", type=int, default=0, help="stop after this many steps (0: run until stopped)")
    g.add_argument("--exit-when-file", nargs="?", const="STOP", default=None, help="stop when this file exists (relative to the run dir; bare flag: STOP)")
    g.add_argument("--log-file", type=Path, default=None, help="JSON-lines log (default RUN/trainer.log)")
    g.add_argument("--quiet", action="store_true", help="do not print log lines to stdout")
    g.add_argument("--dry-run", action="store_true", help="train one step on a random batch, write nothing, print the metrics, exit")
    g.add_argument(
        "--report-to",
        nargs="+",
        default=list(DEFAULT_REPORT_TO),
        metavar="TARGET",
        help="where each step's metrics go besides the log (config trainer.report_to): tensorboard, wandb "
        "(needs the wandb package; the key from WANDB_API_KEY), both (a comma list or several values), or none",
    )
    g.add_argument("--tensorboard-dir", type=Path, default=None, help="TensorBoard event files (default RUN/tensorboard)")

    g = p.add_argument_group("loss")
    g.add_argument("--epsilon-low", type=float, default=0.2)
    g.add_argument("--epsilon-high", type=float, default=0.28)
    g.add_argument("--beta", type=float, default=0.0, help="k3 KL coefficient to the reference (LoRA: the base with the adapter disabled)")
    g.add_argument("--aggregation", choices=AGGREGATIONS, default="token_mean")
    g.add_argument("--dr-grpo-max-tokens", type=int, default=0, help="dr_grpo constant (0: the step's longest trained span)")
    g.add_argument(
        "--max-token-staleness",
        type=int,
        default=-1,
        help="trained tokens sampled by a policy more than this many updates older than the one trained get no gradient "
        "(counted as tokens_dropped_stale; -1: none dropped)",
    )
    g.add_argument("--weight-transfer", choices=choices("--weight-transfer"), default="disk", help="full weights: how they reach vLLM (nccl: broadcast on parley's request)")
    g.add_argument("--nccl-addr", default="", help="host:port of the NCCL rendezvous (--weight-transfer nccl)")
    g.add_argument(
        "--tis-cap",
        type=float,
        default=0.0,
        help="truncated importance sampling cap C (0: off): weight each trained token's policy-gradient loss by "
        "min(exp(logp_trainer_old - logp_sampler), C) and take the ratio against the trainer's own logprobs",
    )
    g.add_argument(
        "--temperature-scaling",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="divide logits by each row's temperature (pair with vLLM --logprobs-mode processed_logprobs); "
        "--no-temperature-scaling for vLLM's default raw_logprobs",
    )

    g = p.add_argument_group("optimizer")
    g.add_argument("--lr", type=float, default=1e-5)
    g.add_argument("--weight-decay", type=float, default=0.0)
    g.add_argument("--adam-beta1", type=float, default=0.9)
    g.add_argument("--adam-beta2", type=float, default=0.999)
    g.add_argument("--adam-eps", type=float, default=1e-8)
    g.add_argument("--max-grad-norm", type=float, default=1.0, help="0 disables clipping")
    g.add_argument("--mini-batches", type=int, default=1, help="optimizer steps per batch")
    g.add_argument("--micro-batch-tokens", type=int, default=4096, help="padded tokens per forward/backward")

    g = p.add_argument_group("model")
    g.add_argument("--full-finetune", action="store_true", help="train every weight instead of a LoRA adapter")
    g.add_argument("--freeze", default="", help="full fine-tune: comma-separated parts of parameter names to keep frozen (e.g. embed_tokens)")
    g.add_argument("--lora-r", type=int, default=16)
    g.add_argument("--lora-alpha", type=int, default=32)
    g.add_argument("--lora-dropout", type=float, default=0.0)
    g.add_argument("--lora-target-modules", default="all-linear", help="comma-separated module names; all-linear is every linear layer but the output head (add lm_head to train it too)")
    g.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    g.add_argument("--dtype", choices=("auto", "float32", "bfloat16"), default="auto", help="auto: bf16 base under LoRA on GPU, else fp32 (bf16 autocast on GPU)")
    g.add_argument("--gradient-checkpointing", action="store_true")
    g.add_argument("--fsdp", action="store_true", help="shard with FSDP (launch with torchrun or accelerate launch)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: default)")
    g.add_argument(
        "--keep-optimizer-states",
        type=int,
        default=2,
        help="keep the resume state (optimizer.pt, rng.pt; under --fsdp accelerate_state/, the whole model and optimizer) "
        "in this many newest checkpoints (0: all; config trainer.keep_states)",
    )
    g.add_argument(
        "--keep-weights",
        type=int,
        default=0,
        help="--full-finetune: keep the full weights in this many newest checkpoints (0: all; config trainer.keep_weights); "
        "older checkpoints keep their DONE and metrics but can no longer be served or evaluated",
    )
    return p


def config_from_args(a: argparse.Namespace) -> TrainConfig:
    if not a.dry_run and a.run_dir is None:
        raise SystemExit("--run-dir is required (except with --dry-run)")
    if a.keep_optimizer_states < 0:
        raise SystemExit(f"--keep-optimizer-states must be 0 (all) or a number of checkpoints, got {a.keep_optimizer_states}")
    if a.keep_weights < 0:
        raise SystemExit(f"--keep-weights must be 0 (all) or a number of checkpoints, got {a.keep_weights}")
    if a.keep_weights > 0 and not a.full_finetune:
        raise SystemExit("--keep-weights is for --full-finetune (a LoRA run keeps every adapter: the league and the server load them)")
    if a.mini_batches < 1:
        raise SystemExit("--mini-batches must be >= 1")
    try:
        report_to = parse_report_to(a.report_to)
    except ReportError as e:
        raise SystemExit(f"trainer: {e}") from e
    if not (a.tis_cap >= 0 and math.isfinite(a.tis_cap)):
        raise SystemExit(f"--tis-cap must be 0 (off) or a positive cap, got {a.tis_cap}")
    targets: list[str] | str = [t.strip() for t in str(a.lora_target_modules).split(",") if t.strip()]
    if targets == ["all-linear"]:
        targets = "all-linear"
    lora = None if a.full_finetune else LoraSettings(r=a.lora_r, alpha=a.lora_alpha, dropout=a.lora_dropout, target_modules=targets)
    run_dir = a.run_dir.resolve() if a.run_dir is not None else Path()
    log_file = a.log_file if a.log_file is not None else (run_dir / "trainer.log" if a.run_dir is not None and not a.dry_run else None)
    return TrainConfig(
        run_dir=run_dir,
        model=a.model.resolve(),
        mode=a.mode,
        url=a.url,
        token_env=a.token_env,
        poll_interval=a.poll_interval,
        http_wait=a.http_wait,
        max_steps=a.max_steps,
        exit_when_file=a.exit_when_file,
        loss=LossConfig(
            epsilon_low=a.epsilon_low,
            epsilon_high=a.epsilon_high,
            beta=a.beta,
            aggregation=a.aggregation,
            dr_grpo_max_tokens=a.dr_grpo_max_tokens,
            temperature_scaling=a.temperature_scaling,
            tis_cap=a.tis_cap,
        ),
        lr=a.lr,
        weight_decay=a.weight_decay,
        adam_beta1=a.adam_beta1,
        adam_beta2=a.adam_beta2,
        adam_eps=a.adam_eps,
        max_grad_norm=a.max_grad_norm,
        mini_batches=a.mini_batches,
        micro_batch_tokens=a.micro_batch_tokens,
        lora=lora,
        device=a.device,
        dtype=a.dtype,
        gradient_checkpointing=a.gradient_checkpointing,
        fsdp=a.fsdp,
        seed=a.seed,
        threads=a.threads,
        keep_optimizer_states=a.keep_optimizer_states,
        keep_weights=a.keep_weights,
        max_token_staleness=a.max_token_staleness,
        freeze=tuple(s.strip() for s in str(a.freeze).split(",") if s.strip()),
        weight_transfer=a.weight_transfer,
        nccl_addr=a.nccl_addr,
        log_file=log_file,
        quiet=a.quiet,
        report_to=() if a.dry_run else report_to,
        tensorboard_dir=a.tensorboard_dir.resolve() if a.tensorboard_dir is not None else None,
    )
