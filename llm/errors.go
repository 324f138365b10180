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
