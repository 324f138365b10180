"""The dev server's engine: a local Hugging Face causal LM on CPU (or GPU),
LoRA adapters loaded at run time through peft, and batched KV-cache
generation.

Requests wait in a queue; a scheduler thread takes every waiting request that
uses the same adapter (up to max_num_seqs rows; a request with n choices is n
rows), left-pads their prompts into one batch and decodes them together until
every row has finished. Each row samples with its own torch.Generator (seed +
choice index when the request has a seed), so a seeded request gives the
same tokens on every call.
"""

from __future__ import annotations

import inspect
import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from .sampling import LOGPROBS_MODES, SamplingParams, sample


class EngineError(Exception):
    """A request the engine refuses; status is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 400, err_type: str = "BadRequestError", param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.err_type = err_type
        self.param = param


@dataclass
class GenRequest:
    """One completion request: a token prompt and its sampling settings."""

    prompt: list[int]
    max_tokens: int
    params: SamplingParams = field(default_factory=SamplingParams)
    n: int = 1
    seed: int | None = None
    stop: list[str] = field(default_factory=list)
    stop_token_ids: list[int] = field(default_factory=list)
    ignore_eos: bool = False
    min_tokens: int = 0
    logprobs: int | None = None
    skip_special_tokens: bool = True
    include_stop_str_in_output: bool = False
    adapter: str | None = None


@dataclass
class Choice:
    """One generated choice. token_ids include a stopping eos or stop token
    (as vLLM's); text does not."""

    token_ids: list[int]
    logprobs: list[float]
    top_logprobs: list[list[tuple[int, float]]]
    text: str
    finish_reason: str
    stop_reason: int | str | None


@dataclass
class _Pending:
    req: GenRequest
    done: threading.Event = field(default_factory=threading.Event)
    result: list[Choice] | None = None
    error: BaseException | None = None


class Engine:
    """Model, tokenizer, adapters and the generation scheduler."""

    def __init__(
        self,
        model_dir: str | Path,
        max_model_len: int = 2048,
        max_num_seqs: int = 64,
        device: str = "cpu",
        dtype: torch.dtype = torch.float32,
        logprobs_mode: str = "raw_logprobs",
        max_logprobs: int = 20,
    ) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

        if logprobs_mode not in LOGPROBS_MODES:
            raise ValueError(f"logprobs mode {logprobs_mode!r}, want one of {LOGPROBS_MODES}")
        self.model_dir = Path(model_dir).resolve()
        self.device = torch.device(device)
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_dir))
        model = AutoModelForCausalLM.from_pretrained(str(self.model_dir), dtype=dtype)
        model.to(self.device)
        model.eval()
        self.base = model
        self.peft: Any = None  # a PeftModel once an adapter is loaded
        self.adapters: dict[str, Path] = {}
        self.max_model_len = max_model_len
        self.max_num_seqs = max(1, max_num_seqs)
        self.logprobs_mode = logprobs_mode
        self.max_logprobs = max_logprobs
        self.vocab_size = int(model.config.vocab_size)
        self.eos_token_id = self.tokenizer.eos_token_id
        if self.eos_token_id is None:
            eos = model.config.eos_token_id
            self.eos_token_id = eos[0] if isinstance(eos, list) else eos
        # Like vLLM, the generation config's other eos ids are stop tokens
        # (finish_reason "stop", stop_reason = the id).
        self.extra_stop_ids: set[int] = set()
        try:
            gc = GenerationConfig.from_pretrained(str(self.model_dir))
            ids = gc.eos_token_id if isinstance(gc.eos_token_id, list) else [gc.eos_token_id]
            self.extra_stop_ids = {int(i) for i in ids if i is not None and int(i) != self.eos_token_id}
        except (OSError, ValueError):
            pass
        self.pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        self._cache_kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        self.lock = threading.Lock()  # the model: generation and adapter changes
        self._cv = threading.Condition()
        self._queue: deque[_Pending] = deque()
        self.running = 0
        self.prompt_tokens_total = 0
        self.generation_tokens_total = 0
        self.requests_total: dict[str, int] = {}
        self._closed = False
        self._global_gen = torch.Generator()
        self._global_gen.manual_seed(int(time.time_ns() % (2**63)))
        self._thread = threading.Thread(target=self._loop, name="engine", daemon=True)
        self._thread.start()

    # ---- adapters -------------------------------------------------------

    def load_adapter(self, name: str, path: str | Path, replace: bool = False) -> None:
        """Load a peft LoRA folder under name."""
        p = Path(path)
        if not (p / "adapter_config.json").is_file():
            raise EngineError(f"Loading lora {name} failed: No adapter found for {path}", 400, "BadRequestError")
        with self.lock:
            if name in self.adapters:
                if not replace:
                    raise EngineError(f"The lora adapter '{name}' has already been loaded.", 400, "InvalidUserInput")
                self._delete_adapter(name)
            from peft import PeftModel

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    if self.peft is None:
                        self.peft = PeftModel.from_pretrained(self.base, str(p), adapter_name=name, is_trainable=False)
                    else:
                        self.peft.load_adapter(str(p), adapter_name=name, is_trainable=False)
                except Exception as e:  # peft raises many kinds
                    raise EngineError(f"Loading lora {name} failed: {e}", 400, "BadRequestError") from e
            self.peft.eval()
            self.adapters[name] = p.resolve()

    def unload_adapter(self, name: str) -> None:
        with self.lock:
            if name not in self.adapters:
                raise EngineError(f"The lora adapter '{name}' cannot be found.", 404, "NotFoundError")
            self._delete_adapter(name)

    def _delete_adapter(self, name: str) -> None:
        del self.adapters[name]
        if not self.adapters:
            # Remove the LoRA layers altogether: the base model is back.
            self.base = self.peft.unload()
            self.peft = None
            return
        if name in self.peft.peft_config:
            other = next(iter(self.adapters))
            self.peft.set_adapter(other)
            self.peft.delete_adapter(name)

    # ---- requests -------------------------------------------------------

    def counts(self) -> tuple[int, int]:
        """(running, waiting) requests."""
        with self._cv:
            return self.running, len(self._queue)

    def generate(self, req: GenRequest) -> list[Choice]:
        """Queue a request and wait for its choices."""
        self.validate(req)
        p = _Pending(req)
        with self._cv:
            self._queue.append(p)
            self._cv.notify()
        p.done.wait()
        if p.error is not None:
            raise p.error
        assert p.result is not None
        return p.result

    def validate(self, req: GenRequest) -> None:
        if not req.prompt:
            raise EngineError("The prompt is empty.", param="prompt")
        for t in req.prompt:
            if t < 0 or t >= self.vocab_size:
                raise EngineError(f"Token id {t} is out of vocabulary", param="prompt")
        if req.adapter is not None and req.adapter not in self.adapters:
            raise EngineError(f"The model `{req.adapter}` does not exist.", 404, "NotFoundError", "model")
        if req.max_tokens < 1:
            raise EngineError(f"max_tokens must be at least 1, got {req.max_tokens}.", param="max_tokens")
        if req.n < 1:
            raise EngineError("n must be at least 1.", param="n")
        if req.logprobs is not None and (req.logprobs < 0 or req.logprobs > self.max_logprobs):
            raise EngineError(f"Requested sample logprobs of {req.logprobs}, which is greater than max allowed: {self.max_logprobs}", param="logprobs")
        plen = len(req.prompt)
        if plen >= self.max_model_len:
            raise EngineError(
                f"This model's maximum context length is {self.max_model_len} tokens. However, your request has {plen} input tokens. "
                "Please reduce the length of the input messages.",
                param="prompt",
            )
        if plen + req.max_tokens > self.max_model_len:
            raise EngineError(
                f"'max_tokens' or 'max_completion_tokens' is too large: {req.max_tokens}. This model's maximum context length is "
                f"{self.max_model_len} tokens and your request has {plen} input tokens ({req.max_tokens} > {self.max_model_len} - {plen}).",
                param="max_tokens",
            )
        p = req.params
        if p.temperature < 0:
            raise EngineError("temperature must be non-negative.", param="temperature")
        if not 0 < p.top_p <= 1:
            raise EngineError(f"top_p must be in (0, 1], got {p.top_p}.", param="top_p")
        if not 0 <= p.min_p <= 1:
            raise EngineError(f"min_p must be in [0, 1], got {p.min_p}.", param="min_p")

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._cv.notify_all()

    # ---- the scheduler --------------------------------------------------

    def _take_wave(self) -> list[_Pending]:
        """Waiting requests with the first one's adapter, up to max_num_seqs
        rows (at least one request)."""
        first = self._queue[0]
        adapter = first.req.adapter
        wave: list[_Pending] = []
        rows = 0
        keep: deque[_Pending] = deque()
        while self._queue:
            p = self._queue.popleft()
            if p.req.adapter == adapter and (not wave or rows + p.req.n <= self.max_num_seqs):
                wave.append(p)
                rows += p.req.n
            else:
                keep.append(p)
        self._queue.extendleft(reversed(keep))
        return wave

    def _loop(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._closed:
                    self._cv.wait()
                if self._closed:
                    for p in self._queue:
                        p.error = EngineError("server shutting down", 503, "ServiceUnavailableError")
                        p.done.set()
                    return
                wave = self._take_wave()
                self.running = len(wave)
            try:
                with self.lock:
                    results = self._run_wave([p.req for p in wave])
                for p, r in zip(wave, results):
                    p.result = r
            except EngineError as e:
                for p in wave:
                    p.error = e
            except Exception as e:  # keep serving; report the failure
                for p in wave:
                    p.error = EngineError(f"generation failed: {type(e).__name__}: {e}", 500, "InternalServerError")
            finally:
                with self._cv:
                    self.running = 0
                for p in wave:
                    if p.result is not None:
                        self.prompt_tokens_total += len(p.req.prompt)
                        for c in p.result:
                            self.generation_tokens_total += len(c.token_ids)
                            self.requests_total[c.finish_reason] = self.requests_total.get(c.finish_reason, 0) + 1
                    p.done.set()

    def _model_for(self, adapter: str | None) -> tuple[Any, Any]:
        """The module to call and a context manager for this adapter."""
        import contextlib

        if adapter is None:
            if self.peft is not None:
                return self.peft, self.peft.disable_adapter()
            return self.base, contextlib.nullcontext()
        # A request may name an adapter unloaded while it waited.
        if adapter not in self.adapters:
            raise EngineError(f"The model `{adapter}` does not exist.", 404, "NotFoundError", "model")
        self.peft.set_adapter(adapter)
        return self.peft, contextlib.nullcontext()

    def _forward(self, model: Any, ids: torch.Tensor, att: torch.Tensor, pos: torch.Tensor, cache: Any) -> tuple[torch.Tensor, Any]:
        kw = {self._cache_kw: cache}
        out = model(input_ids=ids, attention_mask=att, position_ids=pos, use_cache=True, logits_to_keep=1, **kw)
        new_cache = getattr(out, "cache", None)
        if new_cache is None:
            new_cache = getattr(out, "past_key_values", None)
        return out.logits[:, -1, :], new_cache

    @torch.no_grad()
    def _run_wave(self, reqs: list[GenRequest]) -> list[list[Choice]]:
        rows: list[tuple[int, int]] = []  # (request index, choice index)
        gens: list[torch.Generator | None] = []
        params: list[SamplingParams] = []
        for ri, r in enumerate(reqs):
            for ci in range(r.n):
                rows.append((ri, ci))
                params.append(r.params)
                if r.seed is not None:
                    g = torch.Generator()
                    g.manual_seed((r.seed + ci) % (2**63))
                else:
                    g = torch.Generator()
                    g.manual_seed(int(torch.randint(0, 2**62, (1,), generator=self._global_gen)))
                gens.append(g)
        b = len(rows)
        plen = max(len(reqs[ri].prompt) for ri, _ in rows)
        ids = torch.full((b, plen), self.pad_id, dtype=torch.long)
        att = torch.zeros((b, plen), dtype=torch.long)
        for j, (ri, _) in enumerate(rows):
            pr = reqs[ri].prompt
            ids[j, plen - len(pr) :] = torch.tensor(pr, dtype=torch.long)
            att[j, plen - len(pr) :] = 1
        pos = (att.cumsum(-1) - 1).clamp(min=0)
        ids, att, pos = ids.to(self.device), att.to(self.device), pos.to(self.device)

        out_ids: list[list[int]] = [[] for _ in rows]
        out_lp: list[list[float]] = [[] for _ in rows]
        out_top: list[list[list[tuple[int, float]]]] = [[] for _ in rows]
        finish: list[str | None] = [None] * b
        stop_reason: list[int | str | None] = [None] * b
        stop_cut: list[int | None] = [None] * b  # text cut for stop strings
        max_new = max(reqs[ri].max_tokens for ri, _ in rows)
        want_top = max((r.logprobs or 0) for r in reqs)

        model, ctx = self._model_for(reqs[0].adapter)
        with ctx:
            logits, cache = self._forward(model, ids, att, pos, None)
            for t in range(max_new):
                st = sample(logits, params, gens, self.logprobs_mode)
                toks = st.tokens.tolist()
                lps = st.logprobs.tolist()
                top_vals = top_idx = None
                if want_top > 0:
                    tv, ti = st.lp_table.topk(want_top, dim=-1)
                    top_vals, top_idx = tv.tolist(), ti.tolist()
                for j, (ri, _) in enumerate(rows):
                    if finish[j] is not None:
                        continue
                    r = reqs[ri]
                    tok = toks[j]
                    out_ids[j].append(tok)
                    out_lp[j].append(lps[j])
                    if r.logprobs is not None and top_idx is not None and r.logprobs > 0:
                        out_top[j].append(list(zip(top_idx[j][: r.logprobs], top_vals[j][: r.logprobs])))
                    else:
                        out_top[j].append([])
                    n_out = len(out_ids[j])
                    if n_out >= r.min_tokens:
                        if tok == self.eos_token_id and not r.ignore_eos:
                            finish[j] = "stop"
                        elif tok in r.stop_token_ids or (tok in self.extra_stop_ids and not r.ignore_eos):
                            finish[j], stop_reason[j] = "stop", tok
                        elif r.stop:
                            text = self.tokenizer.decode(out_ids[j], skip_special_tokens=r.skip_special_tokens)
                            for s in r.stop:
                                k = text.find(s, max(0, len(text) - len(s) - 64)) if s else -1
                                if k >= 0:
                                    finish[j], stop_reason[j] = "stop", s
                                    stop_cut[j] = k + (len(s) if r.include_stop_str_in_output else 0)
                                    break
                    if finish[j] is None and (n_out >= r.max_tokens or len(r.prompt) + n_out >= self.max_model_len):
                        finish[j] = "length"
                if all(f is not None for f in finish):
                    break
                nxt = torch.tensor(toks, dtype=torch.long, device=self.device).view(b, 1)
                att = torch.cat([att, torch.ones((b, 1), dtype=att.dtype, device=self.device)], dim=1)
                pos = pos[:, -1:] + 1
                logits, cache = self._forward(model, nxt, att, pos, cache)

        results: list[list[Choice]] = [[] for _ in reqs]
        for j, (ri, _) in enumerate(rows):
            r = reqs[ri]
            toks = out_ids[j]
            text_toks = toks
            if finish[j] == "stop" and stop_cut[j] is None:
                text_toks = toks[:-1]  # the eos / stop token is not in the text
            text = self.tokenizer.decode(text_toks, skip_special_tokens=r.skip_special_tokens)
            if stop_cut[j] is not None:
                text = text[: stop_cut[j]]
            results[ri].append(
                Choice(
                    token_ids=toks,
                    logprobs=out_lp[j],
                    top_logprobs=out_top[j],
                    text=text,
                    finish_reason=finish[j] or "length",
                    stop_reason=stop_reason[j],
                )
            )
        return results
