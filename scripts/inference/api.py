"""vLLM's OpenAI-compatible API subset (vLLM >= 0.10.2 JSON shapes) over the
stdlib ThreadingHTTPServer:

    GET  /health, /v1/models, /metrics, /version
    POST /tokenize, /detokenize, /v1/completions
    POST /v1/load_lora_adapter, /v1/unload_lora_adapter

Errors are vLLM's {"error": {"message", "type", "param", "code"}}.
"""

from __future__ import annotations

import json
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .engine import Choice, Engine, EngineError, GenRequest
from .sampling import SamplingParams

MAX_BODY = 64 << 20


class APIError(Exception):
    def __init__(self, message: str, status: int = 400, err_type: str = "BadRequestError", param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.err_type = err_type
        self.param = param


def error_body(message: str, err_type: str, status: int, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": err_type, "param": param, "code": status}}


class App:
    """Request handling independent of the HTTP plumbing."""

    def __init__(self, engine: Engine, served_names: list[str], api_key: str | None = None) -> None:
        self.engine = engine
        self.served_names = served_names
        self.name = served_names[0]
        self.api_key = api_key
        self.created = int(time.time())

    # ---- helpers --------------------------------------------------------

    def resolve_model(self, model: Any) -> str | None:
        """The adapter a request's model names (None: the base model)."""
        if model is None or model == "" or model in self.served_names:
            return None
        if isinstance(model, str) and model in self.engine.adapters:
            return model
        raise APIError(f"The model `{model}` does not exist.", 404, "NotFoundError", "model")

    @staticmethod
    def _get(body: dict[str, Any], key: str, typ: type | tuple[type, ...], default: Any) -> Any:
        v = body.get(key, default)
        if v is None:
            return default
        if typ is float and isinstance(v, int) and not isinstance(v, bool):
            return float(v)
        if isinstance(v, bool) and typ is not bool and (typ is int or typ is float):
            raise APIError(f"{key} must be a number", param=key)
        if not isinstance(v, typ):
            raise APIError(f"{key} has the wrong type: {type(v).__name__}", param=key)
        return v

    def token_str(self, tok: int, as_id: bool) -> str:
        if as_id:
            return f"token_id:{tok}"
        return self.engine.tokenizer.decode([tok], skip_special_tokens=False)

    # ---- endpoints ------------------------------------------------------

    def models(self) -> dict[str, Any]:
        perm = {
            "id": f"modelperm-{uuid.uuid4().hex}",
            "object": "model_permission",
            "created": self.created,
            "allow_create_engine": False,
            "allow_sampling": True,
            "allow_logprobs": True,
            "allow_search_indices": False,
            "allow_view": True,
            "allow_fine_tuning": False,
            "organization": "*",
            "group": None,
            "is_blocking": False,
        }
        data = [
            {
                "id": n,
                "object": "model",
                "created": self.created,
                "owned_by": "vllm",
                "root": str(self.engine.model_dir),
                "parent": None,
                "max_model_len": self.engine.max_model_len,
                "permission": [perm],
            }
            for n in self.served_names
        ]
        for name, path in list(self.engine.adapters.items()):
            data.append(
                {
                    "id": name,
                    "object": "model",
                    "created": self.created,
                    "owned_by": "vllm",
                    "root": str(path),
                    "parent": self.name,
                    "max_model_len": None,
                    "permission": [perm],
                }
            )
        return {"object": "list", "data": data}

    def metrics(self) -> str:
        running, waiting = self.engine.counts()
        lbl = f'engine="0",model_name="{self.name}"'
        lines = [
            "# HELP vllm:num_requests_running Number of requests in model execution batches.",
            "# TYPE vllm:num_requests_running gauge",
            f"vllm:num_requests_running{{{lbl}}} {float(running)}",
            "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
            "# TYPE vllm:num_requests_waiting gauge",
            f"vllm:num_requests_waiting{{{lbl}}} {float(waiting)}",
            "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
            "# TYPE vllm:prompt_tokens_total counter",
            f"vllm:prompt_tokens_total{{{lbl}}} {float(self.engine.prompt_tokens_total)}",
            "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
            "# TYPE vllm:generation_tokens_total counter",
            f"vllm:generation_tokens_total{{{lbl}}} {float(self.engine.generation_tokens_total)}",
            "# HELP vllm:request_success_total Count of successfully processed requests.",
            "# TYPE vllm:request_success_total counter",
        ]
        for reason in ("stop", "length", "abort"):
            n = self.engine.requests_total.get(reason, 0)
            lines.append(f'vllm:request_success_total{{{lbl},finished_reason="{reason}"}} {float(n)}')
        return "\n".join(lines) + "\n"

    def _messages(self, raw: Any) -> list[dict[str, Any]]:
        if not isinstance(raw, list) or not raw:
            raise APIError("messages must be a non-empty list", param="messages")
        out = []
        for i, m in enumerate(raw):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise APIError(f"messages[{i}] must be an object with a role", param="messages")
            content = m.get("content", "")
            if isinstance(content, list):  # content parts: keep the text
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
            elif content is None:
                content = ""
            elif not isinstance(content, str):
                raise APIError(f"messages[{i}].content must be a string or a list of parts", param="messages")
            out.append({**m, "content": content})
        return out

    def tokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        self.resolve_model(body.get("model"))
        tok = self.engine.tokenizer
        if "messages" in body and body["messages"] is not None:
            messages = self._messages(body["messages"])
            kwargs = self._get(body, "chat_template_kwargs", dict, {})
            add_gen = self._get(body, "add_generation_prompt", bool, True)
            cont = self._get(body, "continue_final_message", bool, False)
            if add_gen and cont:
                raise APIError("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
            try:
                text = tok.apply_chat_template(
                    messages, tokenize=False, add_generation_prompt=add_gen, continue_final_message=cont, **kwargs
                )
            except Exception as e:  # template errors
                raise APIError(f"chat template failed: {e}") from e
            add_special = self._get(body, "add_special_tokens", bool, False)
        elif "prompt" in body:
            text = body["prompt"]
            if not isinstance(text, str):
                raise APIError("prompt must be a string", param="prompt")
            add_special = self._get(body, "add_special_tokens", bool, True)
        else:
            raise APIError("either messages or prompt is required")
        ids = tok.encode(text, add_special_tokens=add_special)
        strs = None
        if self._get(body, "return_token_strs", bool, False):
            strs = tok.convert_ids_to_tokens(ids)
        return {"count": len(ids), "max_model_len": self.engine.max_model_len, "tokens": ids, "token_strs": strs}

    def detokenize(self, body: dict[str, Any]) -> dict[str, Any]:
        self.resolve_model(body.get("model"))
        toks = body.get("tokens")
        if not isinstance(toks, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in toks):
            raise APIError("tokens must be a list of integers", param="tokens")
        return {"prompt": self.engine.tokenizer.decode(toks)}

    def _prompts(self, body: dict[str, Any]) -> list[list[int]]:
        p = body.get("prompt")
        tok = self.engine.tokenizer
        if isinstance(p, str):
            return [tok.encode(p, add_special_tokens=self._get(body, "add_special_tokens", bool, True))]
        if isinstance(p, list) and p and all(isinstance(t, int) and not isinstance(t, bool) for t in p):
            return [p]
        if isinstance(p, list) and p and all(isinstance(x, list) for x in p):
            for x in p:
                if not x or not all(isinstance(t, int) and not isinstance(t, bool) for t in x):
                    raise APIError("each prompt must be a non-empty list of token ids", param="prompt")
            return p
        if isinstance(p, list) and p and all(isinstance(x, str) for x in p):
            return [tok.encode(x) for x in p]
        raise APIError("prompt must be a string, a list of token ids, or a list of those", param="prompt")

    def completions(self, body: dict[str, Any]) -> dict[str, Any]:
        adapter = self.resolve_model(body.get("model"))
        if body.get("stream"):
            raise APIError("stream is not supported by the dev server", param="stream")
        if body.get("echo"):
            raise APIError("echo is not supported by the dev server", param="echo")
        if body.get("use_beam_search"):
            raise APIError("beam search is not supported by the dev server", param="use_beam_search")
        prompts = self._prompts(body)
        temperature = self._get(body, "temperature", float, 1.0)
        top_p = self._get(body, "top_p", float, 1.0)
        top_k = self._get(body, "top_k", int, -1)
        min_p = self._get(body, "min_p", float, 0.0)
        n = self._get(body, "n", int, 1)
        seed = self._get(body, "seed", int, None) if body.get("seed") is not None else None
        max_tokens = self._get(body, "max_tokens", int, 16)
        stop = body.get("stop")
        if stop is None:
            stop = []
        elif isinstance(stop, str):
            stop = [stop]
        elif not (isinstance(stop, list) and all(isinstance(s, str) for s in stop)):
            raise APIError("stop must be a string or a list of strings", param="stop")
        stop_ids = self._get(body, "stop_token_ids", list, [])
        logprobs = self._get(body, "logprobs", int, None) if body.get("logprobs") is not None else None
        as_ids = self._get(body, "return_tokens_as_token_ids", bool, False)
        return_ids = self._get(body, "return_token_ids", bool, False)
        skip_special = self._get(body, "skip_special_tokens", bool, True)
        choices_out: list[dict[str, Any]] = []
        prompt_tokens = 0
        completion_tokens = 0
        for pi, prompt in enumerate(prompts):
            req = GenRequest(
                prompt=[int(t) for t in prompt],
                max_tokens=max_tokens,
                params=SamplingParams(temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p),
                n=n,
                seed=seed,
                stop=stop,
                stop_token_ids=[int(t) for t in stop_ids],
                ignore_eos=self._get(body, "ignore_eos", bool, False),
                min_tokens=self._get(body, "min_tokens", int, 0),
                logprobs=logprobs,
                skip_special_tokens=skip_special,
                include_stop_str_in_output=self._get(body, "include_stop_str_in_output", bool, False),
                adapter=adapter,
            )
            choices = self.engine.generate(req)
            prompt_tokens += len(prompt)
            for ci, c in enumerate(choices):
                completion_tokens += len(c.token_ids)
                choices_out.append(self._choice(pi * n + ci, c, prompt, logprobs, as_ids, return_ids))
        return {
            "id": f"cmpl-{uuid.uuid4().hex}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": body.get("model") or self.name,
            "choices": choices_out,
            "service_tier": None,
            "system_fingerprint": None,
            "usage": {
                "prompt_tokens": prompt_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
                "completion_tokens": completion_tokens,
                "prompt_tokens_details": None,
            },
            "kv_transfer_params": None,
        }

    def _choice(self, index: int, c: Choice, prompt: list[int], logprobs: int | None, as_ids: bool, return_ids: bool) -> dict[str, Any]:
        lp_obj = None
        if logprobs is not None:
            tokens, token_lps, tops, offsets = [], [], [], []
            last_len = 0
            for i, tok in enumerate(c.token_ids):
                s = self.token_str(tok, as_ids)
                tokens.append(s)
                token_lps.append(max(c.logprobs[i], -9999.0))
                # As vLLM: the sampled token first, then the top-`logprobs`.
                top: dict[str, float] = {s: max(c.logprobs[i], -9999.0)}
                for t_id, t_lp in c.top_logprobs[i]:
                    key = self.token_str(t_id, as_ids)
                    if key not in top:
                        top[key] = max(t_lp, -9999.0)
                tops.append(top)
                offsets.append(0 if i == 0 else offsets[-1] + last_len)
                last_len = len(s)
            lp_obj = {"text_offset": offsets, "token_logprobs": token_lps, "tokens": tokens, "top_logprobs": tops}
        return {
            "index": index,
            "text": c.text,
            "logprobs": lp_obj,
            "finish_reason": c.finish_reason,
            "stop_reason": c.stop_reason,
            "token_ids": list(c.token_ids) if return_ids else None,
            "prompt_logprobs": None,
            "prompt_token_ids": list(prompt) if return_ids else None,
        }

    def load_lora(self, body: dict[str, Any]) -> str:
        name, path = body.get("lora_name"), body.get("lora_path")
        if not isinstance(name, str) or not name or not isinstance(path, str) or not path:
            raise APIError("Both 'lora_name' and 'lora_path' must be provided.", 400, "InvalidUserInput")
        if name in self.served_names:
            raise APIError(f"The lora adapter '{name}' has already been loaded.", 400, "InvalidUserInput")
        self.engine.load_adapter(name, path, replace=bool(body.get("load_inplace", False)))
        return f"Success: LoRA adapter '{name}' added successfully."

    def unload_lora(self, body: dict[str, Any]) -> str:
        name = body.get("lora_name")
        if not isinstance(name, str) or not name:
            raise APIError("'lora_name' needs to be provided to unload a LoRA adapter.", 400, "InvalidUserInput")
        self.engine.unload_adapter(name)
        return f"Success: LoRA adapter '{name}' removed successfully."


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 keep-alive handler; every response has a Content-Length."""

    protocol_version = "HTTP/1.1"
    server_version = "parley-devserver"
    app: App  # set on the subclass made by make_server
    quiet = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        if not self.quiet:
            super().log_message(format, *args)

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj: Any) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json")

    def _text(self, status: int, text: str, ctype: str = "text/plain; charset=utf-8") -> None:
        self._send(status, text.encode(), ctype)

    def _error(self, e: APIError | EngineError) -> None:
        self._json(e.status, error_body(str(e), e.err_type, e.status, e.param))

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            raise APIError("request body too large", 413, "BadRequestError")
        raw = self.rfile.read(n) if n else b""
        try:
            obj = json.loads(raw or b"{}")
        except json.JSONDecodeError as e:
            raise APIError(f"JSON decode error: {e}") from e
        if not isinstance(obj, dict):
            raise APIError("the request body must be a JSON object")
        return obj

    def _authorized(self) -> bool:
        key = self.app.api_key
        if not key or not self.path.startswith("/v1"):
            return True
        return self.headers.get("Authorization", "") == f"Bearer {key}"

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        try:
            if not self._authorized():
                self._json(401, {"error": "Unauthorized"})
            elif path == "/health":
                self._send(200, b"", "application/json")
            elif path == "/v1/models":
                self._json(200, self.app.models())
            elif path == "/metrics":
                self._text(200, self.app.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            elif path == "/version":
                self._json(200, {"version": "parley-devserver"})
            elif path in POST_ROUTES:
                self._json(405, {"detail": "Method Not Allowed"})
            else:
                self._json(404, {"detail": "Not Found"})
        except (APIError, EngineError) as e:
            self._error(e)

    def do_POST(self) -> None:  # noqa: N802
        path = self.path.split("?", 1)[0]
        try:
            if not self._authorized():
                self._json(401, {"error": "Unauthorized"})
                return
            route = POST_ROUTES.get(path)
            if route is None:
                if path in ("/health", "/v1/models", "/metrics", "/version"):
                    self._json(405, {"detail": "Method Not Allowed"})
                else:
                    self._json(404, {"detail": "Not Found"})
                # drain the body so the connection stays usable
                n = int(self.headers.get("Content-Length") or 0)
                if n:
                    self.rfile.read(min(n, MAX_BODY))
                return
            body = self._body()
            result = getattr(self.app, route)(body)
            if isinstance(result, str):
                self._text(200, result)
            else:
                self._json(200, result)
        except (APIError, EngineError) as e:
            self._error(e)
        except Exception as e:  # a bug: answer, keep serving
            self._json(500, error_body(f"{type(e).__name__}: {e}", "InternalServerError", 500))


POST_ROUTES = {
    "/tokenize": "tokenize",
    "/detokenize": "detokenize",
    "/v1/completions": "completions",
    "/v1/load_lora_adapter": "load_lora",
    "/v1/unload_lora_adapter": "unload_lora",
}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def make_server(app: App, host: str, port: int, quiet: bool = True) -> Server:
    handler = type("BoundHandler", (Handler,), {"app": app, "quiet": quiet})
    return Server((host, port), handler)
