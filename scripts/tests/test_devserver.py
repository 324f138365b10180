"""The dev inference server over real HTTP: vLLM's JSON shapes, seeded
sampling, logprobs, LoRA load/unload with an adapter the trainer saved."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import torch

from helpers import load_model, make_rows
from trainer.batch import write_batch
from trainer.train import main as train_main

SCRIPTS = Path(__file__).resolve().parents[1]
NAME = "tiny"


@pytest.fixture(scope="module")
def trained_adapter(tiny_model, tmp_path_factory) -> Path:
    """A LoRA adapter saved by the trainer after one step."""
    run = tmp_path_factory.mktemp("run")
    model = load_model(tiny_model)
    write_batch(str(run), 1, 0, make_rows(model, 4, model.config.vocab_size, seed=5))
    assert train_main(["--run-dir", str(run), "--model", str(tiny_model), "--max-steps", "1", "--lr", "5e-2", "--lora-r", "4", "--quiet"]) == 0
    return run / "checkpoints" / "step-000001"


@pytest.fixture(scope="module")
def server(tiny_model):
    env = {**os.environ, "PYTHONWARNINGS": "ignore", "TOKENIZERS_PARALLELISM": "false"}
    p = subprocess.Popen(
        [sys.executable, str(SCRIPTS / "devserver.py"), "--model", str(tiny_model), "--served-model-name", NAME,
         "--port", "0", "--max-model-len", "256"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
    )
    url = None
    deadline = time.time() + 180
    while time.time() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        if '"listening"' in line:
            url = json.loads(line)["url"]
            break
    if url is None:
        p.kill()
        pytest.fail("the dev server did not start")
    yield url
    p.terminate()
    try:
        p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()


def call(url: str, method: str, path: str, body: dict | None = None) -> tuple[int, str, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, r.headers.get("Content-Type", ""), r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers.get("Content-Type", ""), e.read()


def ok_json(url: str, method: str, path: str, body: dict | None = None) -> dict:
    status, _, data = call(url, method, path, body)
    assert status == 200, f"{method} {path} = {status} {data[:300]!r}"
    return json.loads(data)


def prompt(url: str) -> list[int]:
    r = ok_json(url, "POST", "/tokenize", {"model": NAME, "messages": [{"role": "user", "content": "Share the credit fairly."}],
                                          "add_generation_prompt": True, "chat_template_kwargs": {"enable_thinking": False}})
    return r["tokens"]


def completion_body(p: list[int], **kw) -> dict:
    body = {"model": NAME, "prompt": p, "max_tokens": 12, "temperature": 1.0, "top_p": 1.0, "n": 1, "seed": 7, "logprobs": 1,
            "return_token_ids": True, "return_tokens_as_token_ids": True, "skip_special_tokens": False}
    body.update(kw)
    return body


def test_health_models_metrics(server):
    status, _, body = call(server, "GET", "/health")
    assert status == 200 and body == b""
    models = ok_json(server, "GET", "/v1/models")
    assert models["object"] == "list" and models["data"][0]["id"] == NAME and models["data"][0]["max_model_len"] == 256
    status, ctype, text = call(server, "GET", "/metrics")
    assert status == 200 and ctype.startswith("text/plain")
    t = text.decode()
    assert f'vllm:num_requests_running{{engine="0",model_name="{NAME}"}}' in t
    assert f'vllm:num_requests_waiting{{engine="0",model_name="{NAME}"}}' in t


def test_tokenize_shapes(server, tiny_model):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tiny_model))
    msgs = [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "Hello"}]
    r = ok_json(server, "POST", "/tokenize", {"model": NAME, "messages": msgs, "add_generation_prompt": True})
    assert set(r) >= {"count", "max_model_len", "tokens"} and r["count"] == len(r["tokens"]) and r["max_model_len"] == 256
    text = tok.decode(r["tokens"])
    assert text == "<|im_start|>system\nBe fair.<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n"
    no_gen = ok_json(server, "POST", "/tokenize", {"model": NAME, "messages": msgs, "add_generation_prompt": False})
    assert r["tokens"][: no_gen["count"]] == no_gen["tokens"] and no_gen["count"] < r["count"]
    p = ok_json(server, "POST", "/tokenize", {"model": NAME, "prompt": "Hello there"})
    assert p["tokens"] == tok.encode("Hello there")


def test_completion_shapes_and_logprobs(server, tiny_model):
    p = prompt(server)
    r = ok_json(server, "POST", "/v1/completions", completion_body(p))
    assert r["object"] == "text_completion" and r["model"] == NAME
    c = r["choices"][0]
    assert c["index"] == 0 and c["finish_reason"] in ("stop", "length")
    ids = c["token_ids"]
    lp = c["logprobs"]
    assert len(ids) == len(lp["token_logprobs"]) == len(lp["tokens"]) == len(lp["text_offset"]) == len(lp["top_logprobs"])
    assert lp["tokens"] == [f"token_id:{t}" for t in ids]
    assert all(x <= 0 for x in lp["token_logprobs"])
    assert all(f"token_id:{t}" in top for t, top in zip(ids, lp["top_logprobs"]))
    assert c["prompt_token_ids"] == p
    assert r["usage"]["prompt_tokens"] == len(p) and r["usage"]["completion_tokens"] == len(ids)
    if c["finish_reason"] == "length":
        assert len(ids) == 12
    # Default logprobs mode is vLLM's raw_logprobs: the model's own
    # distribution, whatever the temperature.
    model = load_model(tiny_model)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([p + ids])).logits[0, len(p) - 1 : -1]
    want = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)
    for got, w in zip(lp["token_logprobs"], want.tolist()):
        assert got == pytest.approx(w, abs=1e-3)


def test_seed_determinism_and_n(server):
    p = prompt(server)
    a = ok_json(server, "POST", "/v1/completions", completion_body(p, seed=11))["choices"][0]["token_ids"]
    b = ok_json(server, "POST", "/v1/completions", completion_body(p, seed=11))["choices"][0]["token_ids"]
    c = ok_json(server, "POST", "/v1/completions", completion_body(p, seed=12))["choices"][0]["token_ids"]
    assert a == b
    assert a != c
    r = ok_json(server, "POST", "/v1/completions", completion_body(p, n=3, seed=11))
    assert [ch["index"] for ch in r["choices"]] == [0, 1, 2]
    assert r["choices"][0]["token_ids"] == a  # choice i uses seed + i
    assert r["choices"][1]["token_ids"] != a


def test_greedy_stop_and_length(server):
    p = prompt(server)
    g1 = ok_json(server, "POST", "/v1/completions", completion_body(p, temperature=0, seed=None))["choices"][0]
    g2 = ok_json(server, "POST", "/v1/completions", completion_body(p, temperature=0, seed=99))["choices"][0]
    assert g1["token_ids"] == g2["token_ids"]
    one = ok_json(server, "POST", "/v1/completions", completion_body(p, max_tokens=1))["choices"][0]
    assert len(one["token_ids"]) == 1
    # ignore_eos=False with the eos forced as a stop token: eos included in token_ids, not in text
    eos_first = ok_json(server, "POST", "/v1/completions", completion_body(p, max_tokens=4, stop_token_ids=[g1["token_ids"][0]], temperature=0))
    ch = eos_first["choices"][0]
    assert ch["finish_reason"] == "stop" and ch["stop_reason"] == g1["token_ids"][0] and ch["token_ids"] == g1["token_ids"][:1]
    assert ch["text"] == ""


def test_errors_in_vllm_shape(server):
    status, _, body = call(server, "POST", "/v1/completions", completion_body([1, 2, 3], model="no-such-model"))
    assert status == 404
    err = json.loads(body)["error"]
    assert err["type"] == "NotFoundError" and err["code"] == 404 and "no-such-model" in err["message"] and "param" in err
    status, _, body = call(server, "POST", "/v1/completions", completion_body([1, 2, 3], max_tokens=300))
    assert status == 400 and "maximum context length" in json.loads(body)["error"]["message"]
    status, _, body = call(server, "POST", "/v1/completions", completion_body([10**7]))
    assert status == 400 and json.loads(body)["error"]["code"] == 400


def test_lora_load_use_unload(server, trained_adapter):
    p = prompt(server)
    status, ctype, body = call(server, "POST", "/v1/load_lora_adapter", {"lora_name": "step1", "lora_path": str(trained_adapter)})
    assert status == 200 and ctype.startswith("text/plain"), body
    assert body.decode() == "Success: LoRA adapter 'step1' added successfully."
    ids = [m["id"] for m in ok_json(server, "GET", "/v1/models")["data"]]
    assert ids == [NAME, "step1"]
    status, _, body = call(server, "POST", "/v1/load_lora_adapter", {"lora_name": "step1", "lora_path": str(trained_adapter)})
    assert status == 400 and "already been loaded" in json.loads(body)["error"]["message"]

    base = ok_json(server, "POST", "/v1/completions", completion_body(p, temperature=0, max_tokens=8, logprobs=0))["choices"][0]
    lora = ok_json(server, "POST", "/v1/completions", completion_body(p, model="step1", temperature=0, max_tokens=8, logprobs=0))
    assert lora["model"] == "step1"
    lc = lora["choices"][0]
    # the adapter changes the distribution (trained at a high learning rate)
    assert lc["logprobs"]["token_logprobs"] != base["logprobs"]["token_logprobs"]
    base_again = ok_json(server, "POST", "/v1/completions", completion_body(p, temperature=0, max_tokens=8, logprobs=0))["choices"][0]
    assert base_again["logprobs"]["token_logprobs"] == pytest.approx(base["logprobs"]["token_logprobs"], abs=1e-5)

    status, _, body = call(server, "POST", "/v1/unload_lora_adapter", {"lora_name": "step1"})
    assert status == 200 and body.decode() == "Success: LoRA adapter 'step1' removed successfully."
    assert [m["id"] for m in ok_json(server, "GET", "/v1/models")["data"]] == [NAME]
    status, _, _ = call(server, "POST", "/v1/unload_lora_adapter", {"lora_name": "step1"})
    assert status == 404
    status, _, _ = call(server, "POST", "/v1/completions", completion_body(p, model="step1"))
    assert status == 404
    after = ok_json(server, "POST", "/v1/completions", completion_body(p, temperature=0, max_tokens=8, logprobs=0))["choices"][0]
    assert after["logprobs"]["token_logprobs"] == pytest.approx(base["logprobs"]["token_logprobs"], abs=1e-5)
    assert all(math.isfinite(x) for x in after["logprobs"]["token_logprobs"])
