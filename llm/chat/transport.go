package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/retry"
)

// attemptInfo carries per-attempt data between the chat helper and the
// HTTP doer through the request context.
type attemptInfo struct {
	temperature float64       // written into the request body
	retryAfter  time.Duration // from Retry-After / retry-after-ms (retry.After), 0 if none
}

type attemptKey struct{}

// doer is the HTTP layer under go-openai. go-openai's ChatCompletionRequest
// marks temperature omitempty, so a temperature of 0 would never be sent:
// doer rewrites each JSON request body to hold "temperature" explicitly,
// taking it from the attempt found in the request context (a request
// without one is sent as it is). It also records Retry-After on that
// attempt, because go-openai's error types do not expose response headers.
type doer struct {
	client *http.Client
}

// Do implements go-openai's HTTPDoer.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(attemptKey{}).(*attemptInfo)
	if info != nil && req.Body != nil && req.Method == http.MethodPost {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("reward: read request body: %w", err)
		}
		body, err = setTemperature(body, info.temperature)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		req.ContentLength = int64(len(body))
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, err
	}
	if info != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500) {
		if d, ok := retry.After(resp.Header, time.Now()); ok {
			info.retryAfter = d
		}
	}
	return resp, nil
}

// setTemperature returns the JSON object body with its "temperature" member
// set to t.
func setTemperature(body []byte, t float64) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("reward: request body is not a JSON object: %w", err)
	}
	m["temperature"] = json.RawMessage(strconv.FormatFloat(t, 'f', -1, 64))
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("reward: encode request body: %w", err)
	}
	return out, nil
}
