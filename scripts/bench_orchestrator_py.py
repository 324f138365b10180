#!/usr/bin/env python3
"""The Python asyncio baseline of parley's orchestrator benchmark.

DESIGN.md ("Scale") sizes parley's own CPU against a Python asyncio
orchestrator doing the same /tokenize + /v1/completions turns. This is that
orchestrator, written the way such a program is usually written, on one of
three client stacks (--client):

* httpx: plain asyncio, one httpx.AsyncClient, json bodies, response.json();
* httpx2: the same on pydantic's fork of httpx (its pool does not rescan
  every connection for each request);
* aiohttp: the fastest common asyncio stack: uvloop's event loop, one
  aiohttp.ClientSession, bodies encoded and decoded with orjson.

It does the work of parley's rollout runner for the deliberation game:

* the prompts: the bundled curriculum and persona library, persona_pair_id
  resolved (inline personas win), optionally picked and ordered by id
  (--prompt-ids) so that a side-by-side run plays exactly parley's rows;
* the game (rollout/deliberation): agents A and B alternate turns with their
  own system prompts and views; a turn containing the marker accepts; two
  consecutive accepting turns end the dialogue; at most --max-rounds rounds;
  then one final completion from the transcript;
* each turn (rollout/agents.go), in one of parley's two history modes
  (--history, config rollout.history):
  - tokens (parley's default; rollout/bridge.go): an agent's first turn
    renders its view with POST /tokenize; each later turn keeps the agent's
    sampled ids verbatim and appends only the bridge: the messages its view
    gained, rendered after a fixed dummy assistant message and cut where the
    dummy ends (learned once per run by four /tokenize probes, not counted),
    with the template's end-of-turn token appended under mask 0 when a turn
    was cut before it (closed turns); a view that did not grow by appending
    starts a new sequence (a prefix break);
  - rerender: POST /tokenize with the agent's whole view, the
    prefix-extension check against the agent's training sequence (extend
    under mask 0, or start a new sequence on a prefix break);
  then max_tokens clamped to max_model_len, POST /v1/completions with the
  token ids and the same body fields as llm/complete.go (max_tokens,
  temperature, top_p, n, seed, logprobs 1, return_token_ids,
  return_tokens_as_token_ids, skip_special_tokens false), the response
  checked (one choice, token_ids, one logprob per token, echoed
  prompt_token_ids equal to the prompt), the sampled ids appended under
  mask 1 with their logprobs;
* seeds derived exactly as parley derives them (rollout.DeriveSeed: group
  seed from (seed, group id, index), turn seed from (rollout seed, role,
  turn)), so against serve-sim both orchestrators sample the same tokens;
* G rollouts per prompt, at most --concurrency rollouts in flight
  (asyncio.Semaphore), retries of 429/5xx/transport errors.

It prints one JSON line: rollouts, failures, requests, tokens (prompt tokens
recorded, sampled, sent in completion requests; trainer tokens), prefix
breaks, closed turns, rollouts/s and its own CPU time per request
(resource.getrusage(RUSAGE_SELF), user + sys, over the run: imports, prompt
loading and client creation excluded, as in parley's benchmark). --dump FILE
also writes every rollout as JSON lines, in the fields of parley's rollout
record (dataset.Rollout), for cross-checks against parley's runner.

    python scripts/bench_orchestrator_py.py --url http://127.0.0.1:8000 --client aiohttp
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

COLLECTIVE_AGENCY = (
    "Collective Agency: seek the course of action that most expands the agency of everyone "
    "involved — their capacities, options, understanding and freedom to choose — now and over "
    "time, integrating the values at stake rather than sacrificing one side to the other."
)
OPENING = "Agent B is listening. Open the negotiation with your proposal."
KIND_DIALOGUE = "dialogue"
KIND_FINAL = "final"
SPLIT_TRAIN = "train"
HISTORY_TOKENS = "tokens"
HISTORY_RERENDER = "rerender"

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_CURRICULUM = os.path.join(ROOT, "rollout", "deliberation", "curricula", "sample-dilemmas.jsonl")
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
    """Reads the curriculum as dataset.LoadPrompts does: persona_pair_id
    resolved against the library (names included) unless the row gives its
    personas inline, a row without a split in the train split."""
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
            if p.get("persona_a") or p.get("persona_b"):
                pa, pb = p.get("persona_a", ""), p.get("persona_b", "")
                na, nb = p.get("persona_a_name", ""), p.get("persona_b_name", "")
            else:
                pair = lib.get(p.get("persona_pair_id", ""))
                if pair is None:
                    raise SystemExit(f"{curriculum}:{n}: unknown persona_pair_id {p.get('persona_pair_id')!r}")
                pa, pb, na, nb = pair["a"], pair["b"], pair.get("name_a", ""), pair.get("name_b", "")
            if not p.get("task", "").strip() or not pa.strip() or not pb.strip():
                raise SystemExit(f"{curriculum}:{n}: the deliberation game needs a task and two personas")
            p["persona_a"], p["persona_b"] = pa, pb
            p["personas"] = [persona("A", pa, na), persona("B", pb, nb)] + p.get("personas", [])
            p["split"] = p.get("split") or SPLIT_TRAIN
            prompts.append(p)
    return prompts


def persona(role: str, text: str, name: str) -> dict:
    """dataset.Persona as parley writes it (name omitted when empty)."""
    out = {"role": role, "text": text}
    if name:
        out["name"] = name
    return out


class TurnError(Exception):
    pass


class BadRequest(TurnError):
    """A 400 answer: vLLM's answer when the chat template raises."""


# --- transports: one POST of a JSON body, its decoded JSON answer ---------


class HttpxTransport:
    """plain asyncio + httpx (or httpx2): json= bodies, response.json()."""

    def __init__(self, mod, url: str, concurrency: int):
        self.mod = mod
        limits = mod.Limits(max_connections=2 * concurrency, max_keepalive_connections=2 * concurrency)
        self.client = mod.AsyncClient(base_url=url, limits=limits, timeout=mod.Timeout(60.0))
        self.transport_errors = (mod.TransportError,)

    async def post(self, path: str, body: dict) -> tuple[int, object]:
        r = await self.client.post(path, json=body)
        if r.status_code == 200:
            return 200, r.json()
        return r.status_code, r.text[:200]

    async def close(self) -> None:
        await self.client.aclose()


class AiohttpTransport:
    """uvloop + aiohttp + orjson: one ClientSession, bodies encoded and
    decoded with orjson (aiohttp's own json= would use the json module)."""

    def __init__(self, url: str, concurrency: int):
        import aiohttp
        import orjson

        self.url = url.rstrip("/")
        self.dumps, self.loads = orjson.dumps, orjson.loads
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=2 * concurrency, limit_per_host=2 * concurrency),
            timeout=aiohttp.ClientTimeout(total=60.0),
        )
        self.headers = {"Content-Type": "application/json"}
        self.transport_errors = (aiohttp.ClientError, asyncio.TimeoutError)

    async def post(self, path: str, body: dict) -> tuple[int, object]:
        async with self.session.post(self.url + path, data=self.dumps(body), headers=self.headers) as r:
            data = await r.read()
            if r.status == 200:
                return 200, self.loads(data)
            return r.status, data[:200].decode("utf-8", "replace")

    async def close(self) -> None:
        await self.session.close()


class Policy:
    """The server calls: /tokenize and token-id /v1/completions, with retries."""

    def __init__(self, transport, model: str, retries: int = 4):
        self.transport = transport
        self.model = model
        self.retries = retries

    async def _post(self, path: str, body: dict) -> dict:
        for attempt in range(self.retries + 1):
            try:
                status, out = await self.transport.post(path, body)
            except self.transport.transport_errors as e:
                if attempt == self.retries:
                    raise TurnError(f"POST {path}: {e!r}") from e
            else:
                if status == 200:
                    return out
                if status == 400:
                    raise BadRequest(f"POST {path}: HTTP 400: {out}")
                if (status != 429 and status < 500) or attempt == self.retries:
                    raise TurnError(f"POST {path}: HTTP {status}: {out}")
            await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
        raise AssertionError("unreachable")

    async def tokenize(self, messages: list[dict], chat_template_kwargs: dict | None, gen: bool = True) -> tuple[list[int], int]:
        body = {"model": self.model, "messages": messages, "add_generation_prompt": gen}
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


def bridge_dummy(content: str) -> dict:
    """rollout.bridgeDummy: an assistant message with empty reasoning, sent
    under both of its names as llm.Message sends it."""
    return {"role": "assistant", "content": content, "reasoning": "", "reasoning_content": ""}


class Bridge:
    """rollout.Bridge: the tokens that join an agent's sampled turn to its
    next generation prompt, rendered after a fixed dummy conversation and cut
    where it ends. What it learns of the template (the dummy rendered alone,
    the end-of-turn token, the separator after it) is learned once per run
    and kwargs, by four /tokenize probes."""

    def __init__(self, policy: Policy):
        self.policy = policy
        self.facts: dict[str, dict] = {}
        self.locks: dict[str, asyncio.Lock] = {}

    async def learn(self, kwargs: dict | None) -> dict:
        key = json.dumps(kwargs, sort_keys=True)
        f = self.facts.get(key)
        if f is not None:
            return f
        lock = self.locks.setdefault(key, asyncio.Lock())
        async with lock:
            f = self.facts.get(key)
            if f is None:
                f = await self._probe(kwargs)
                self.facts[key] = f
        return f

    async def _probe(self, kwargs: dict | None) -> dict:
        async def render(gen: bool, *msgs: dict) -> list[int]:
            try:
                tokens, _ = await self.policy.tokenize(list(msgs), kwargs, gen)
            except BadRequest as e:
                raise TurnError(f"the chat template cannot render the bridge between turns: it refuses the dummy conversation ({e})") from e
            return tokens

        x = await render(False, bridge_dummy("x"))
        y = await render(False, bridge_dummy("y"))
        k = 0
        while k < len(x) and k < len(y) and x[len(x) - 1 - k] == y[len(y) - 1 - k]:
            k += 1
        if k == 0 or k == len(x):
            raise TurnError("the chat template cannot render the bridge between turns: cannot find where it ends an assistant message")
        user = {"role": "user", "content": "u"}
        with_gen = await render(True, bridge_dummy("x"), user)
        no_gen = await render(False, bridge_dummy("x"), user)
        if with_gen[: len(x)] != x:
            raise TurnError("the chat template cannot render the bridge between turns: an assistant message renders differently when a user message follows it")
        if len(with_gen) <= len(no_gen) or with_gen[: len(no_gen)] != no_gen:
            raise TurnError("the chat template cannot render the bridge between turns: it renders no generation prompt")
        return {"base": x, "eot": x[len(x) - k], "gap": x[len(x) - k + 1 :]}

    async def render(self, kwargs: dict | None, msgs: list[dict]) -> tuple[list[int], int]:
        f = await self.learn(kwargs)
        full, max_model_len = await self.policy.tokenize([bridge_dummy("x")] + msgs, kwargs)
        base = f["base"]
        if full[: len(base)] != base:
            raise TurnError("the chat template cannot render the bridge between turns: the dummy renders differently with messages after it")
        return full[len(base) - len(f["gap"]) :], max_model_len


class Agent:
    """rollout.agentState: what a recorder keeps of one role."""

    __slots__ = ("raw", "seq", "turns", "view")

    def __init__(self) -> None:
        self.seq: dict | None = None
        self.turns = 0
        self.view: list[dict] = []
        self.raw = ""

    def added(self, msgs: list[dict]) -> list[dict] | None:
        """The messages msgs adds to the last view plus the agent's reply,
        or None when the view did not grow by appending."""
        n = len(self.view)
        if len(msgs) <= n or msgs[:n] != self.view:
            return None
        reply = msgs[n]
        if reply["role"] != "assistant" or clean_text(reply["content"]) != clean_text(self.raw):
            return None
        return msgs[n + 1 :]


class Recorder:
    """rollout.Recorder: one rollout's agents and their training sequences."""

    def __init__(self, policy: Policy, bridge: Bridge, history: str, sampling: dict, chat_template_kwargs: dict | None, seed: int):
        self.policy = policy
        self.bridge = bridge
        self.history = history
        self.sampling = sampling
        self.kwargs = chat_template_kwargs
        self.seed = seed
        self.seqs: list[dict] = []
        self.systems: list[dict] = []
        self.agents: dict[str, Agent] = {}
        self.prefix_breaks = 0
        self.requests = 0
        self.prompt_tokens = 0
        self.sampled_tokens = 0
        self.prompt_tokens_sent = 0
        self.closed_turns = 0

    def _start(self, role: str, st: Agent, kind: str, tokens: list[int]) -> None:
        s = {"role": role, "kind": kind, "input_ids": [], "loss_mask": [], "logprobs": []}
        self.seqs.append(s)
        st.seq = s
        self._append_prompt(s, tokens)

    def _append_prompt(self, s: dict, ids: list[int]) -> None:
        s["input_ids"].extend(ids)
        s["loss_mask"].extend([0] * len(ids))
        s["logprobs"].extend([0.0] * len(ids))
        self.prompt_tokens += len(ids)

    async def _extend_rerender(self, role: str, st: Agent, messages: list[dict], kind: str) -> int:
        self.requests += 1
        try:
            tokens, max_model_len = await self.policy.tokenize(messages, self.kwargs)
        except TurnError as e:
            raise TurnError(f"tokenize turn of {role}: {e}") from e
        s = st.seq
        if s is not None and s["kind"] == kind and tokens[: len(s["input_ids"])] == s["input_ids"]:
            self._append_prompt(s, tokens[len(s["input_ids"]) :])
            return max_model_len
        if s is not None:
            self.prefix_breaks += 1
        self._start(role, st, kind, tokens)
        return max_model_len

    async def _extend_tokens(self, role: str, st: Agent, messages: list[dict], kind: str) -> int:
        try:
            facts = await self.bridge.learn(self.kwargs)
        except TurnError as e:
            raise TurnError(f"turn of {role}: {e}") from e
        s = st.seq
        if s is not None and s["kind"] == kind:
            added = st.added(messages)
            if added is not None:
                self.requests += 1
                try:
                    ids, max_model_len = await self.bridge.render(self.kwargs, added)
                except TurnError as e:
                    raise TurnError(f"turn {st.turns + 1} of {role}: {e}") from e
                if s["input_ids"][-1] != facts["eot"]:
                    self._append_prompt(s, [facts["eot"]])
                    self.closed_turns += 1
                self._append_prompt(s, ids)
                return max_model_len
        if s is not None:
            self.prefix_breaks += 1
        self.requests += 1
        try:
            tokens, max_model_len = await self.policy.tokenize(messages, self.kwargs)
        except TurnError as e:
            raise TurnError(f"tokenize turn of {role}: {e}") from e
        self._start(role, st, kind, tokens)
        return max_model_len

    async def turn(self, role: str, messages: list[dict], kind: str, max_tokens: int) -> dict:
        st = self.agents.get(role)
        if st is None:
            st = self.agents[role] = Agent()
            if messages and messages[0]["role"] == "system":
                self.systems.append({"role": role, "text": messages[0]["content"]})
        if self.history == HISTORY_TOKENS:
            max_model_len = await self._extend_tokens(role, st, messages, kind)
        else:
            max_model_len = await self._extend_rerender(role, st, messages, kind)
        s = st.seq

        sp = dict(self.sampling)
        if max_tokens > 0:
            sp["max_tokens"] = max_tokens
        if max_model_len > 0:
            room = max_model_len - len(s["input_ids"])
            if room <= 0:
                raise TurnError(f"turn of {role}: the prompt fills the context")
            sp["max_tokens"] = min(sp["max_tokens"], room)
        turn = st.turns
        st.turns = turn + 1
        sp["n"] = 1
        sp["seed"] = derive_seed(self.seed, role, turn)
        self.requests += 1
        self.prompt_tokens_sent += len(s["input_ids"])
        try:
            c = await self.policy.complete(s["input_ids"], sp)
        except TurnError as e:
            raise TurnError(f"sample turn {turn + 1} of {role}: {e}") from e
        ids = c["token_ids"]
        s["input_ids"].extend(ids)
        s["loss_mask"].extend([1] * len(ids))
        s["logprobs"].extend(c["logprobs"]["token_logprobs"])
        self.sampled_tokens += len(ids)
        st.view = list(messages)
        text = c.get("text") or ""
        st.raw = text
        return {"text": clean_text(text), "raw": text, "tokens": len(ids), "finish_reason": c.get("finish_reason") or ""}


class Deliberation:
    """rollout/deliberation: seed 000's two-agent negotiation game."""

    roles = ("A", "B", "final")

    def __init__(self, max_rounds: int, turn_tokens: int, final_tokens: int, marker: str = "[AGREE]"):
        self.max_rounds = max_rounds
        self.turn_tokens = turn_tokens
        self.final_tokens = final_tokens
        self.marker = marker
        # The marker as a token, as parley's deliberation.Marker matches it:
        # case-insensitively, a marker that begins with a word character
        # only at the start of a word ("agree" in "agreed", not in
        # "disagree"; "[AGREE]" wherever it stands).
        pat = re.escape(marker)
        if marker[:1].isalnum() or marker[:1] == "_":
            pat = r"(?:^|[^\w])" + pat
        self.marker_re = re.compile(pat, re.IGNORECASE)

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
                agree = self.marker_re.search(reply["text"]) is not None
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


async def play_one(args, game: Deliberation, policy: Policy, bridge: Bridge, sampling: dict, kwargs, p: dict, group: int, index: int) -> tuple[dict, Recorder]:
    group_id = f"s{args.step:06d}-g{group:05d}"
    seed = derive_seed(args.seed, group_id, index)
    rec = {
        "run_id": args.run_id,
        "step": args.step,
        "env": "deliberation",
        "prompt_id": p["id"],
        "group_id": group_id,
        "rollout_id": f"{group_id}-{index:03d}",
        "index": index,
        "category": p.get("category", ""),
        "split": p["split"],
        "task": p["task"],
        "persona_pair_id": p.get("persona_pair_id", ""),
        "personas": p["personas"],
        "seed": seed,
        "temperature": sampling["temperature"],
        "started_unix_ms": int(time.time() * 1000),
        "turns": [],
        "agreed": False,
        "rounds": 0,
        "final": "",
        # rollout.RoleOutcomes: every role is played by the trained policy
        "roles": [{"role": r, "policy": "trained", "model": args.model, "trained": True} for r in game.roles],
        "failed": False,
        "error": "",
    }
    agents = Recorder(policy, bridge, args.history, sampling, kwargs, seed)
    t0 = time.perf_counter()
    try:
        await game.play(p, agents, rec)
    except TurnError as e:
        rec["failed"], rec["error"] = True, str(e)
    rec["rollout_ms"] = int((time.perf_counter() - t0) * 1000)
    rec["sequences"] = agents.seqs
    rec["system_prompts"] = agents.systems
    rec["prefix_breaks"] = agents.prefix_breaks
    rec["prompt_tokens"] = agents.prompt_tokens
    rec["sampled_tokens"] = agents.sampled_tokens
    rec["requests"] = agents.requests
    return rec, agents


def cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def make_transport(args):
    if args.client == "aiohttp":
        return AiohttpTransport(args.url, args.concurrency)
    if args.client == "httpx2":
        import httpx2

        return HttpxTransport(httpx2, args.url, args.concurrency)
    import httpx

    return HttpxTransport(httpx, args.url, args.concurrency)


async def run(args, prompts: list[dict]) -> dict:
    game = Deliberation(args.max_rounds, args.turn_tokens, args.final_tokens)
    sampling = {"max_tokens": args.turn_tokens, "temperature": args.temperature}
    if args.top_p:
        sampling["top_p"] = args.top_p
    kwargs = json.loads(args.chat_template_kwargs) if args.chat_template_kwargs else None
    transport = make_transport(args)
    try:
        policy = Policy(transport, args.model)
        bridge = Bridge(policy)
        sem = asyncio.Semaphore(args.concurrency)
        dump = open(args.dump, "w", encoding="utf-8") if args.dump else None  # noqa: SIM115 (closed after the loop; an error ends the process)
        summary = {"rollouts": 0, "failed": 0, "agreed": 0, "rounds": 0, "requests": 0, "prompt_tokens": 0,
                   "sampled_tokens": 0, "prefix_breaks": 0, "sequences": 0, "trainer_tokens": 0,
                   "prompt_tokens_sent": 0, "closed_turns": 0}
        errors: list[str] = []

        async def bounded(p, g, i):
            async with sem:
                return await play_one(args, game, policy, bridge, sampling, kwargs, p, g, i)

        cpu0, t0 = cpu_seconds(), time.perf_counter()
        tasks = [asyncio.ensure_future(bounded(p, g, i)) for g, p in enumerate(prompts) for i in range(args.group)]
        for fut in asyncio.as_completed(tasks):
            rec, agents = await fut
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
            summary["sequences"] += len(rec["sequences"])
            summary["trainer_tokens"] += sum(len(s["input_ids"]) for s in rec["sequences"])
            summary["prompt_tokens_sent"] += agents.prompt_tokens_sent
            summary["closed_turns"] += agents.closed_turns
        elapsed, cpu = time.perf_counter() - t0, cpu_seconds() - cpu0
        if dump is not None:
            dump.close()
    finally:
        await transport.close()
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
    ap.add_argument("--history", choices=(HISTORY_TOKENS, HISTORY_RERENDER), default=HISTORY_TOKENS,
                    help="how an agent's conversation is carried from turn to turn, as parley's rollout.history")
    ap.add_argument("--dump", default="", help="also write every rollout to this JSON lines file")
    ap.add_argument("--client", choices=("httpx", "httpx2", "aiohttp"), default="httpx",
                    help="httpx (plain asyncio), httpx2 (pydantic's fork with a linear-time pool), "
                         "or aiohttp (uvloop + aiohttp + orjson, the fastest common stack)")
    args = ap.parse_args()

    all_prompts = load_prompts(args.curriculum, args.personas)
    if args.prompt_ids:
        by_id = {p["id"]: p for p in all_prompts}
        try:
            prompts = [by_id[i] for i in args.prompt_ids.split(",")]
        except KeyError as e:
            raise SystemExit(f"--prompt-ids: unknown prompt id {e}") from None
    else:
        prompts = [all_prompts[i % len(all_prompts)] for i in range(args.prompts)]
    if args.client == "aiohttp":
        import aiohttp
        import uvloop

        out = uvloop.run(run(args, prompts))
        version = f"aiohttp {aiohttp.__version__}, uvloop {uvloop.__version__}, orjson {__import__('orjson').__version__}"
    else:
        out = asyncio.run(run(args, prompts))
        version = __import__(args.client).__version__
    out.update(python=sys.version.split()[0], client=args.client, client_version=version, history=args.history,
               prompts=len(prompts), group=args.group, concurrency=args.concurrency)
    print(json.dumps(out))
    return 1 if out["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
