package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrNoTokenIDs means a completion response carried no token_ids: the
// server ignored return_token_ids, which vLLM older than 0.10.2 does.
var ErrNoTokenIDs = errors.New("the response has no token_ids: the server ignored return_token_ids " +
	"(a vLLM older than 0.10.2 does this; upgrade vLLM to 0.10.2 or later)")

// ErrBadResponse means a 2xx response did not have the expected shape.
var ErrBadResponse = errors.New("malformed response")

// APIError is an error status answered by an inference server, in either
// of vLLM's error shapes ({"error":{...}} or the older flat
// {"object":"error",...}), FastAPI's {"detail":...}, or a non-JSON body.
type APIError struct {
	Endpoint string // the endpoint's base URL
	Path     string // the request path, e.g. /v1/completions
	Status   int    // the HTTP status code
	Type     string // the error type, e.g. BadRequestError; may be empty
	Code     string // the error code as text; may be empty
	Message  string // the server's message, or the start of a non-JSON body
}

// Error returns a sentence naming the endpoint, path, status and message.
func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(e.Endpoint)
	b.WriteString(e.Path)
	b.WriteString(" answered HTTP ")
	b.WriteString(strconv.Itoa(e.Status))
	if t := http.StatusText(e.Status); t != "" {
		b.WriteString(" ")
		b.WriteString(t)
	}
	if e.Type != "" {
		b.WriteString(" (")
		b.WriteString(e.Type)
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	} else {
		b.WriteString(" with an empty body")
	}
	return b.String()
}

// Temporary reports whether the status is one a retry may cure (429, 5xx).
func (e *APIError) Temporary() bool {
	return e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// errorBody covers both of vLLM's error shapes and FastAPI's detail shape.
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Detail  json.RawMessage `json:"detail"`
}

type errorInfo struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

// maxErrorText bounds how much of a non-JSON body goes into a message.
const maxErrorText = 512

// parseAPIError turns an error response into an *APIError.
func parseAPIError(endpoint, path string, status int, body []byte) *APIError {
	e := &APIError{Endpoint: endpoint, Path: path, Status: status}
	var eb errorBody
	if len(body) > 0 && body[0] == '{' && json.Unmarshal(body, &eb) == nil {
		var info errorInfo
		switch {
		case len(eb.Error) > 0 && eb.Error[0] == '{' && json.Unmarshal(eb.Error, &info) == nil:
			e.Message, e.Type, e.Code = info.Message, info.Type, codeText(info.Code)
		case len(eb.Error) > 0 && eb.Error[0] == '"':
			_ = json.Unmarshal(eb.Error, &e.Message)
		case eb.Message != "" || eb.Object == "error":
			e.Message, e.Type, e.Code = eb.Message, eb.Type, codeText(eb.Code)
		case len(eb.Detail) > 0:
			var s string
			if json.Unmarshal(eb.Detail, &s) == nil {
				e.Message = s
			} else {
				e.Message = clip(string(eb.Detail))
			}
		}
		if e.Message == "" {
			e.Message = clip(string(body))
		}
		return e
	}
	e.Message = clip(strings.TrimSpace(string(body)))
	return e
}

// codeText renders a JSON code (number, string or null) as text.
func codeText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// clip shortens s to maxErrorText bytes on a rune boundary.
func clip(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}

// Causes parley recognises in a server's answers. Each error that carries
// one names the server, what it answered and the fix; test for them with
// errors.Is.
var (
	// ErrNotRunning: nothing listens at the endpoint (connection refused)
	// and it has never answered this client.
	ErrNotRunning = errors.New("nothing is listening there (connection refused)")
	// ErrEngineDead: the server is up but its engine has died (vLLM's
	// EngineDeadError); every request fails until it is restarted.
	ErrEngineDead = errors.New("the vLLM engine has died")
	// ErrModelNotServed: the server does not serve the requested model or
	// adapter name.
	ErrModelNotServed = errors.New("the server does not serve this model")
	// ErrLoRADisabled: the server cannot load LoRA adapters at run time.
	ErrLoRADisabled = errors.New("the server cannot load LoRA adapters at run time")
	// ErrLoRARank: the adapter's rank exceeds the server's --max-lora-rank.
	ErrLoRARank = errors.New("the adapter's LoRA rank exceeds the server's --max-lora-rank")
	// ErrAdapterNotFound: the server found no adapter at the path given.
	ErrAdapterNotFound = errors.New("the server found no LoRA adapter at that path")
	// ErrServerTooOld: the server's version is older than parley needs.
	ErrServerTooOld = errors.New("the server's vLLM is older than 0.10.2")
)

// Fixes, named once.
const (
	fixEngineDead = "restart the server (parley restarts one it started itself with train.server_command); " +
		"its log names the root cause. On CPU, serve with --no-enable-chunked-prefill: vLLM 0.32's engine dies " +
		"on a seeded request whose prefill is chunked (\"CPU Generator does not use offset\")"
	fixModel = "set policy.model to a name the server serves (vLLM's --served-model-name; GET /v1/models lists " +
		"them), or load the adapter before sampling from it"
	fixLoRARoutes = "start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True (which adds /v1/load_lora_adapter) " +
		"and --enable-lora --max-lora-rank R (R at least trainer.lora_r)"
	fixLoRAEnable = "start vLLM with --enable-lora --max-lora-rank R (R at least trainer.lora_r)"
	fixLoRARank   = "start vLLM with --max-lora-rank at least trainer.lora_r"
	fixAdapter    = "vLLM loads adapters by path: it must see the run directory at the same path (the same " +
		"machine or a shared file system), and the trainer must have written the adapter there " +
		"(adapter_config.json and the weights)"
	fixNotRunning = "start the inference server (vLLM, or parley serve-sim for a dry run) or fix policy.endpoints"
)

// CauseError is an error answer (or a refused connection) whose cause
// parley recognises: Cause is one of the Err* values above, Fix what to do.
// It unwraps to Cause and to the underlying error (an *APIError for an
// answer).
type CauseError struct {
	Cause error
	Err   error
	Fix   string
}

// Error reads "<what the server answered> — cause: <cause>; fix: <fix>".
func (e *CauseError) Error() string {
	return e.Err.Error() + " — cause: " + e.Cause.Error() + "; fix: " + e.Fix
}

// Unwrap returns the cause and the underlying error.
func (e *CauseError) Unwrap() []error { return []error{e.Cause, e.Err} }

// engineDeadMarkers are the messages of a dead engine: vLLM V1's
// EngineDeadError ("EngineCore encountered an issue...") and the V0
// engine's AsyncEngineDeadError ("Background loop has errored already").
var engineDeadMarkers = []string{"EngineCore encountered an issue", "EngineDeadError", "Background loop has errored", "AsyncEngineDeadError"}

// engineDead recognises a dead engine's answer: a 5xx whose message is
// vLLM's EngineDeadError.
func engineDead(e *APIError) error {
	if e.Status < 500 {
		return nil
	}
	for _, m := range engineDeadMarkers {
		if strings.Contains(e.Message, m) || strings.Contains(e.Type, m) {
			return &CauseError{Cause: ErrEngineDead, Err: e, Fix: fixEngineDead}
		}
	}
	return nil
}

// modelNotServed recognises vLLM's 404 "The model `x` does not exist."
// on a request naming a model.
func modelNotServed(e *APIError) error {
	m := strings.ToLower(e.Message)
	if e.Status == http.StatusNotFound && strings.Contains(m, "model") && strings.Contains(m, "does not exist") {
		return &CauseError{Cause: ErrModelNotServed, Err: e, Fix: fixModel}
	}
	return nil
}

// loraCause tells apart the LoRA failures vLLM answers: a 404 or 405 from
// the framework for a route that does not exist (the server runs without
// VLLM_ALLOW_RUNTIME_LORA_UPDATING: FastAPI's {"detail":"Not Found"}; any
// 404 that is not about a "lora adapter"), a
// 404 "No adapter found for <path>" (the route exists, the path does not),
// "LoRA is not enabled" (no --enable-lora) and a rank above
// --max-lora-rank. Anything else is left to the retry rules.
func loraCause(e *APIError) error {
	m := e.Message
	switch {
	case strings.Contains(m, "No adapter found"):
		return &CauseError{Cause: ErrAdapterNotFound, Err: e, Fix: fixAdapter}
	case strings.Contains(m, "LoRA is not enabled"):
		return &CauseError{Cause: ErrLoRADisabled, Err: e, Fix: fixLoRAEnable}
	case strings.Contains(m, "max_lora_rank"):
		return &CauseError{Cause: ErrLoRARank, Err: e, Fix: fixLoRARank}
	case (e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed) && !strings.Contains(strings.ToLower(m), "lora adapter"):
		return &CauseError{Cause: ErrLoRADisabled, Err: e, Fix: fixLoRARoutes}
	}
	return nil
}
