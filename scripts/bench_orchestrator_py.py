#!/usr/bin/env python3
"""The Python asyncio + httpx baseline of parley's orchestrator benchmark.

DESIGN.md ("Scale") sizes parley's own CPU against "a Python asyncio + httpx
orchestrator doing the same /tokenize + /v1/completions turns". This is that
orchestrator, written the way such a program is usually written (plain
asyncio, one httpx.AsyncClient, json bodies, response.json()), doing the work
of parley's rollout runner for the deliberation game:

* the prompts: the bundled curriculum and persona library, persona_pair_id
  resolved (inline personas win), optionally picked and ordered by id
  (--prompt-ids) so that a side-by-side run plays exactly parley's rows;
* the game (rollout/game.go): agents A and B alternate turns with their own
  system prompts and views; a turn containing the marker accepts; two
  consecutive accepting turns end the dialogue; at most --max-rounds rounds;
  then one final completion from the transcript;
* each turn (rollout/agents.go): POST /tokenize with the agent's messages,
  the prefix-extension check against the agent's training sequence (extend
  under mask 0, or start a new sequence on a prefix break), max_tokens
  clamped to max_model_len, POST /v1/completions with the token ids and the
  same body fields as llm/complete.go (max_tokens, temperature, top_p, n,
  seed, logprobs 1, return_token_ids, return_tokens_as_token_ids,
  skip_special_tokens false), the response checked (one choice, token_ids,
  one logprob per token, echoed prompt_token_ids equal to the prompt), the
  sampled ids appended under mask 1 with their logprobs;
* seeds derived exactly as parley derives them (rollout.DeriveSeed: group
  seed from (seed, group id, index), turn seed from (rollout seed, role,
  turn)), so against serve-sim both orchestrators sample the same tokens;
* G rollouts per prompt, at most --concurrency rollouts in flight
  (asyncio.Semaphore), retries of 429/5xx/transport errors.

It prints one JSON line: rollouts, failures, requests, tokens, rollouts/s and
its own CPU time per request (resource.getrusage(RUSAGE_SELF), user + sys,
over the run: imports, prompt loading and client creation excluded, as in
parley's benchmark). --dump FILE also writes every rollout as JSON lines
(rollout_id, agreed, rounds, final, turns, sequences) for cross-checks
against parley's runner.

    python scripts/bench_orchestrator_py.py --url http://127.0.0.1:8000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import resource
import struct
import sys
import time

import httpx

# --client httpx2 swaps in pydantic's fork (the same API; its pool does not
# rescan every connection for each request). It is rebound in main().
COLLECTIVE_AGENCY = (
    "Collective Agency: seek the course of action that most expands the agency of everyone "
    "involved — their capacities, options, understanding and freedom to choose — now and over "
    "time, integrating the values at stake rather than sacrificing one side to the other."
)
OPENING = "Agent B is listening. Open the negotiation with your proposal."
KIND_DIALOGUE = "dialogue"
KIND_FINAL = "final"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CURRICULUM = os.path.join(ROOT, "dataset", "curricula", "sample-dilemmas.jsonl")
DEFAULT_PERSONAS = os.path.join(ROOT, "dataset", "personas", "library.jsonl")

MASK64 = (1 << 64) - 1


def derive_seed(parent: int, label: str, n: int) -> int:
    """rollout.DeriveSeed: FNV-1a 64 over (parent, label, n), splitmix64 finaliser."""
    h = 0xCBF29CE484222325
    for b in struct.pack("<Q", parent & MASK64) + label.encode() + struct.pack("<Q", n & MASK64):
        h = ((h ^ b) * 0x100000001B3) & MASK64
    z = (h + 0x9E3779B97F4A7C15) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    z ^= z >> 31
    return z & 0x7FFFFFFF


_THINK = re.compile(r"<think>.*?</think>", re.S)
_END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "</s>")


def clean_text(s: str) -> str:
    """rollout.CleanText: <think> blocks and end-of-turn tokens removed."""
    s = _THINK.sub("", s)
    i = s.find("<think>")
    if i >= 0:
        s = s[:i]
    for e in _END_TOKENS:
        s = s.replace(e, "")
    return s.strip()


def load_prompts(curriculum: str, personas: str) -> list[dict]:
    """Reads the curriculum, resolving persona_pair_id against the library."""
    lib = {}
    with open(personas, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                p = json.loads(line)
                lib[p["id"]] = p
    prompts = []
    with open(curriculum, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            p = json.loads(line)
            if not p.get("persona_a") and not p.get("persona_b"):
                pair = lib.get(p.get("persona_pair_id", ""))
                if pair is None:
                    raise SystemExit(f"{curriculum}:{n}: unknown persona_pair_id {p.get('persona_pair_id')!r}")
                p["persona_a"], p["persona_b"] = pair["a"], pair["b"]
            if not p.get("task", "").strip() or not p["persona_a"].strip() or not p["persona_b"].strip():
                raise SystemExit(f"{curriculum}:{n}: the deliberation game needs a task and two personas")
            prompts.append(p)
    return prompts


class TurnError(Exception):
    pass


class Policy:
    """The server calls: /tokenize and token-id /v1/completions, with retries."""

    def __init__(self, client: httpx.AsyncClient, model: str, retries: int = 4):
        self.client = client
        self.model = model
        self.retries = retries

    async def _post(self, path: str, body: dict) -> dict:
        for attempt in range(self.retries + 1):
            try:
                r = await self.client.post(path, json=body)
            except httpx.TransportError as e:
                if attempt == self.retries:
                    raise TurnError(f"POST {path}: {e!r}") from e
            else:
                if r.status_code == 200:
                    return r.json()
                if (r.status_code != 429 and r.status_code < 500) or attempt == self.retries:
                    raise TurnError(f"POST {path}: HTTP {r.status_code}: {r.text[:200]}")
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError("unreachable")

    async def tokenize(self, messages: list[dict], chat_template_kwargs: dict | None) -> tuple[list[int], int]:
        body = {"model": self.model, "messages": messages, "add_generation_prompt": True}
        if chat_template_kwargs:
            body["chat_template_kwargs"] = chat_template_kwargs
        out = await self._post("/tokenize", body)
        tokens = out.get("tokens")
        if tokens is None:
            raise TurnError("no tokens in the /tokenize response")
        count = out.get("count")
        if count is not None and count != len(tokens):
            raise TurnError(f"/tokenize count {count} but {len(tokens)} tokens")
        return tokens, out.get("max_model_len") or 0

    async def complete(self, prompt: list[int], sampling: dict) -> dict:
        body = {"model": self.model, "prompt": prompt}
        body.update(sampling)
        body.update(logprobs=1, return_token_ids=True, return_tokens_as_token_ids=True, skip_special_tokens=False)
        out = await self._post("/v1/completions", body)
        choices = out.get("choices") or []
        if len(choices) != 1:
            raise TurnError(f"{len(choices)} choices, want 1")
        c = choices[0]
        ids = c.get("token_ids")
        if ids is None:
            raise TurnError("the server returned no token_ids")
        lps = (c.get("logprobs") or {}).get("token_logprobs")
        if lps is None or len(lps) != len(ids) or any(v is None for v in lps):
            raise TurnError("logprobs.token_logprobs missing or not one per token")
        echo = c.get("prompt_token_ids")
        if echo is not None and echo != prompt:
            raise TurnError("the server's prompt_token_ids differ from the prompt sent")
        return c


class Recorder:
    """rollout.Recorder: one rollout's agents and their training sequences."""

    def __init__(self, policy: Policy, sampling: dict, chat_template_kwargs: dict | None, seed: int):
        self.policy = policy
        self.sampling = sampling
        self.kwargs = chat_template_kwargs
        self.seed = seed
        self.seqs: list[dict] = []
        self.cur: dict[str, int] = {}
        self.turns: dict[str, int] = {}
        self.prefix_breaks = 0
        self.requests = 0
        self.prompt_tokens = 0
        self.sampled_tokens = 0

    async def turn(self, role: str, messages: list[dict], kind: str, max_tokens: int) -> dict:
        self.requests += 1
        try:
            tokens, max_model_len = await self.policy.tokenize(messages, self.kwargs)
        except TurnError as e:
            raise TurnError(f"tokenize turn of {role}: {e}") from e
        idx = self.cur.get(role)
        s = self.seqs[idx] if idx is not None else None
        if s is not None and s["kind"] == kind and tokens[: len(s["input_ids"])] == s["input_ids"]:
            delta = tokens[len(s["input_ids"]) :]
            s["input_ids"].extend(delta)
            s["loss_mask"].extend([0] * len(delta))
            s["logprobs"].extend([0.0] * len(delta))
            self.prompt_tokens += len(delta)
        else:
            if s is not None:
                self.prefix_breaks += 1
            s = {
                "role": role,
                "kind": kind,
                "input_ids": list(tokens),
                "loss_mask": [0] * len(tokens),
                "logprobs": [0.0] * len(tokens),
            }
            self.seqs.append(s)
            self.cur[role] = len(self.seqs) - 1
            self.prompt_tokens += len(tokens)

        sp = dict(self.sampling)
        if max_tokens > 0:
            sp["max_tokens"] = max_tokens
        if max_model_len > 0:
            room = max_model_len - len(s["input_ids"])
            if room <= 0:
                raise TurnError(f"turn of {role}: the prompt fills the context")
            sp["max_tokens"] = min(sp["max_tokens"], room)
        turn = self.turns.get(role, 0)
        self.turns[role] = turn + 1
        sp["n"] = 1
        sp["seed"] = derive_seed(self.seed, role, turn)
        self.requests += 1
        try:
            c = await self.policy.complete(s["input_ids"], sp)
        except TurnError as e:
            raise TurnError(f"sample turn {turn + 1} of {role}: {e}") from e
        ids = c["token_ids"]
        s["input_ids"].extend(ids)
        s["loss_mask"].extend([1] * len(ids))
        s["logprobs"].extend(c["logprobs"]["token_logprobs"])
        self.sampled_tokens += len(ids)
        text = c.get("text") or ""
        return {"text": clean_text(text), "raw": text, "tokens": len(ids), "finish_reason": c.get("finish_reason") or ""}


class Deliberation:
    """rollout.Deliberation: seed 000's two-agent negotiation game."""

    def __init__(self, max_rounds: int, turn_tokens: int, final_tokens: int, marker: str = "[AGREE]"):
        self.max_rounds = max_rounds
        self.turn_tokens = turn_tokens
        self.final_tokens = final_tokens
        self.marker = marker

    def system(self, p: dict, me: str, other: str, persona: str) -> str:
        m = self.marker
        return (
            f"You are Agent {me}, negotiating with Agent {other} to decide what to do about the task below.\n\n"
            f"Task: {p['task']}\n\n"
            f"Your persona: {persona}\n\n"
            f"Shared objective — {COLLECTIVE_AGENCY}\n\n"
            f"Argue from your persona, listen to Agent {other}, and work toward a concrete proposal you can both "
            f"accept. Keep each turn to a few sentences addressed to Agent {other}. When you accept the standing "
            f"proposal, end your turn with {m}. The negotiation ends when both agents have written {m} in "
            f"consecutive turns."
        )

    @staticmethod
    def view(sys_prompt: str, me: str, turns: list[dict]) -> list[dict]:
        msgs = [{"role": "system", "content": sys_prompt}]
        if me == "A":
            msgs.append({"role": "user", "content": OPENING})
        for t in turns:
            msgs.append({"role": "assistant" if t["agent"] == me else "user", "content": t["text"]})
        return msgs

    def final_prompt(self, p: dict, turns: list[dict], agreed: bool) -> list[dict]:
        parts = [
            f"Task: {p['task']}\n\nPersonas:\nAgent A: {p['persona_a']}\nAgent B: {p['persona_b']}\n\n"
            "Negotiation transcript:\n"
        ]
        for t in turns:
            parts.append(f"Agent {t['agent']}: {t['text']}\n\n")
        if agreed:
            parts.append(
                "The agents reached agreement. Write the final solution to the task: one paragraph stating the "
                "course of action they agreed on and why it serves everyone involved."
            )
        else:
            parts.append(
                "The agents did not reach agreement. Write the final solution to the task: one paragraph stating "
                "the best course of action that integrates both positions and why it serves everyone involved."
            )
        return [
            {"role": "system", "content": "You turn a negotiation into the final solution of its task. " + COLLECTIVE_AGENCY},
            {"role": "user", "content": "".join(parts)},
        ]

    async def play(self, p: dict, agents: Recorder, rec: dict) -> None:
        sys_prompts = {
            "A": self.system(p, "A", "B", p["persona_a"]),
            "B": self.system(p, "B", "A", p["persona_b"]),
        }
        turns = rec["turns"]
        prev_agree = False
        rounds = 0
        done = False
        for rnd in range(1, self.max_rounds + 1):
            rounds = rnd
            for me in ("A", "B"):
                reply = await agents.turn(me, self.view(sys_prompts[me], me, turns), KIND_DIALOGUE, self.turn_tokens)
                agree = self.marker in reply["text"]
                turns.append(
                    {"agent": me, "text": reply["text"], "tokens": reply["tokens"], "finish_reason": reply["finish_reason"], "agree": agree}
                )
                if agree and prev_agree:
                    rec["agreed"] = True
                    done = True
                    break
                prev_agree = agree
            if done:
                break
        rec["rounds"] = rounds
        final = await agents.turn("final", self.final_prompt(p, turns, rec["agreed"]), KIND_FINAL, self.final_tokens)
        rec["final"] = final["text"]
        turns.append({"agent": "final", "text": final["text"], "tokens": final["tokens"], "finish_reason": final["finish_reason"], "agree": False})


async def play_one(args, game: Deliberation, policy: Policy, sampling: dict, kwargs, p: dict, group: int, index: int) -> dict:
    group_id = "s%06d-g%05d" % (args.step, group)
    seed = derive_seed(args.seed, group_id, index)
    rec = {
        "run_id": args.run_id,
        "step": args.step,
        "env": "deliberation",
        "prompt_id": p["id"],
        "group_id": group_id,
        "rollout_id": "%s-%03d" % (group_id, index),
        "index": index,
        "category": p.get("category", ""),
        "task": p["task"],
        "persona_a": p["persona_a"],
        "persona_b": p["persona_b"],
        "seed": seed,
        "temperature": sampling["temperature"],
        "started_unix_ms": int(time.time() * 1000),
        "turns": [],
        "agreed": False,
        "rounds": 0,
        "final": "",
        "failed": False,
        "error": "",
    }
    agents = Recorder(policy, sampling, kwargs, seed)
    t0 = time.perf_counter()
    try:
        await game.play(p, agents, rec)
    except TurnError as e:
        rec["failed"], rec["error"] = True, str(e)
    rec["rollout_ms"] = int((time.perf_counter() - t0) * 1000)
    rec["sequences"] = agents.seqs
    rec["prefix_breaks"] = agents.prefix_breaks
    rec["prompt_tokens"] = agents.prompt_tokens
    rec["sampled_tokens"] = agents.sampled_tokens
    rec["requests"] = agents.requests
    return rec


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


async def run(args, prompts: list[dict]) -> dict:
    game = Deliberation(args.max_rounds, args.turn_tokens, args.final_tokens)
    sampling = {"max_tokens": args.turn_tokens, "temperature": args.temperature}
    if args.top_p:
        sampling["top_p"] = args.top_p
    kwargs = json.loads(args.chat_template_kwargs) if args.chat_template_kwargs else None
    limits = httpx.Limits(max_connections=2 * args.concurrency, max_keepalive_connections=2 * args.concurrency)
    async with httpx.AsyncClient(base_url=args.url, limits=limits, timeout=httpx.Timeout(60.0)) as client:
        policy = Policy(client, args.model)
        sem = asyncio.Semaphore(args.concurrency)
        dump = open(args.dump, "w", encoding="utf-8") if args.dump else None
        summary = {"rollouts": 0, "failed": 0, "agreed": 0, "rounds": 0, "requests": 0, "prompt_tokens": 0,
                   "sampled_tokens": 0, "prefix_breaks": 0}
        errors: list[str] = []

        async def bounded(p, g, i):
            async with sem:
                return await play_one(args, game, policy, sampling, kwargs, p, g, i)

        cpu0, t0 = cpu_seconds(), time.perf_counter()
        tasks = [asyncio.ensure_future(bounded(p, g, i)) for g, p in enumerate(prompts) for i in range(args.group)]
        for fut in asyncio.as_completed(tasks):
            rec = await fut
            summary["rollouts"] += 1
            if dump is not None:
                dump.write(json.dumps(rec, ensure_ascii=False) + "\n")
            if rec["failed"]:
                summary["failed"] += 1
                errors.append(f"{rec['rollout_id']}: {rec['error']}")
                continue
            summary["agreed"] += rec["agreed"]
            summary["rounds"] += rec["rounds"]
            for k in ("requests", "prompt_tokens", "sampled_tokens", "prefix_breaks"):
                summary[k] += rec[k]
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        if dump is not None:
            dump.close()
    ok = summary["rollouts"] - summary["failed"]
    req = max(summary["requests"], 1)
    summary.update(
        elapsed_s=round(elapsed, 4),
        rollouts_per_s=round(summary["rollouts"] / elapsed, 2),
        req_per_s=round(summary["requests"] / elapsed, 1),
        requests_per_rollout=round(summary["requests"] / max(ok, 1), 4),
        agreement_rate=round(summary["agreed"] / max(ok, 1), 4),
        mean_rounds=round(summary["rounds"] / max(ok, 1), 4),
        cpu_s=round(cpu, 4),
        cpu_us_per_req=round(cpu * 1e6 / req, 1),
        process_cpu_us_per_req=round(cpu_seconds() * 1e6 / req, 1),
        errors=errors[:5],
    )
    return summary


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8000 (serve-sim)")
    ap.add_argument("--model", default="sim-policy")
    ap.add_argument("--curriculum", default=DEFAULT_CURRICULUM)
    ap.add_argument("--personas", default=DEFAULT_PERSONAS)
    ap.add_argument("--prompt-ids", default="", help="comma-separated prompt ids, in order (repeats allowed); default: the curriculum cycled to --prompts rows")
    ap.add_argument("--prompts", type=int, default=64)
    ap.add_argument("--group", type=int, default=8, help="G, rollouts per prompt")
    ap.add_argument("--concurrency", type=int, default=256, help="rollouts in flight")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--step", type=int, default=0)
    ap.add_argument("--run-id", default="")
    ap.add_argument("--max-rounds", type=int, default=5)
    ap.add_argument("--turn-tokens", type=int, default=96)
    ap.add_argument("--final-tokens", type=int, default=128)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--chat-template-kwargs", default="", help="JSON object sent with /tokenize")
    ap.add_argument("--dump", default="", help="also write every rollout to this JSON lines file")
    ap.add_argument("--client", choices=("httpx", "httpx2"), default="httpx",
                    help="httpx (DESIGN.md's baseline) or httpx2, pydantic's fork with a linear-time pool")
    args = ap.parse_args()
    if args.client == "httpx2":
        global httpx
        import httpx2 as httpx

    all_prompts = load_prompts(args.curriculum, args.personas)
    if args.prompt_ids:
        by_id = {p["id"]: p for p in all_prompts}
        try:
            prompts = [by_id[i] for i in args.prompt_ids.split(",")]
        except KeyError as e:
            raise SystemExit(f"--prompt-ids: unknown prompt id {e}") from None
    else:
        prompts = [all_prompts[i % len(all_prompts)] for i in range(args.prompts)]
    out = asyncio.run(run(args, prompts))
    out.update(python=sys.version.split()[0], client=args.client, client_version=httpx.__version__, prompts=len(prompts), group=args.group,
               concurrency=args.concurrency)
    print(json.dumps(out))
    return 1 if out["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
