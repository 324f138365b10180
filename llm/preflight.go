package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

const pathVersion = "/version"

// ServerInfo is what Preflight learned of one endpoint, for the run
// directory.
type ServerInfo struct {
	// Endpoint is the endpoint's base URL (any password redacted).
	Endpoint string `json:"endpoint"`
	// Version is vLLM's version from GET /version ("" when the server has
	// no such route).
	Version string `json:"version,omitempty"`
	// Models are the names it serves (GET /v1/models): the base model and
	// any loaded LoRA adapters.
	Models []string `json:"models,omitempty"`
}

// minVLLM is the oldest vLLM that honours return_token_ids.
var minVLLM = [3]int{0, 10, 2}

// Preflight checks every endpoint once, before a run, without retries, so
// that a server that is not running is named at once rather than after the
// retry budget: it answers GET /health (a 503 there is vLLM's dead engine),
// its GET /version is not older than vLLM 0.10.2 (older servers ignore
// return_token_ids), and GET /v1/models lists model (skipped when model is
// ""). It returns what it learned of each endpoint, in order, and one error
// naming every failing endpoint, its cause (ErrNotRunning, ErrEngineDead,
// ErrServerTooOld, ErrModelNotServed: test with errors.Is) and the fix.
func (c *Client) Preflight(ctx context.Context, model string) ([]ServerInfo, error) {
	eps := c.endpoints()
	out := make([]ServerInfo, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		out[i].Endpoint = ep.name
		if err := c.preflightHealth(ctx, ep); err != nil {
			return err
		}
		v, err := c.versionOn(ctx, ep)
		if err != nil {
			return err
		}
		out[i].Version = v
		if tooOld(v) {
			return &CauseError{Cause: ErrServerTooOld, Err: fmt.Errorf("%s reports vLLM %s", ep.name, v),
				Fix: "upgrade vLLM to 0.10.2 or later (parley needs return_token_ids)"}
		}
		if out[i].Models, err = c.modelsOn(ctx, ep); err != nil {
			return err
		}
		if model != "" && !slices.Contains(out[i].Models, model) {
			return &CauseError{Cause: ErrModelNotServed,
				Err: fmt.Errorf("%s serves %q, not %q", ep.name, out[i].Models, model), Fix: fixModel}
		}
		return nil
	})
	return out, summarize("llm.Preflight", "failed", errs)
}

// preflightHealth is one GET /health, naming the endpoint and the cause.
func (c *Client) preflightHealth(ctx context.Context, ep *endpoint) error {
	err := c.do(ctx, &call{method: http.MethodGet, path: pathHealth, pin: ep, maxAttempts: 1, timeout: c.probeTimeout()})
	if err == nil {
		c.markUp(ep)
		return nil
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
		// vLLM's /health answers 503, with no body, once its engine has died.
		return &CauseError{Cause: ErrEngineDead, Err: err, Fix: fixEngineDead}
	}
	if !strings.Contains(err.Error(), ep.name) {
		err = fmt.Errorf("%s: %w", ep.name, err)
	}
	return err
}

// Version returns each endpoint's vLLM version (GET /version), in endpoint
// order; "" for a server without the route. The error names every endpoint
// that failed.
func (c *Client) Version(ctx context.Context) ([]string, error) {
	eps := c.endpoints()
	out := make([]string, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		v, err := c.versionOn(ctx, ep)
		out[i] = v
		return err
	})
	return out, summarize("llm.Version", "failed", errs)
}

// versionOn reads one endpoint's GET /version: {"version": "0.32.0"}. A 404
// (a server that is not vLLM) is no version, not an error.
func (c *Client) versionOn(ctx context.Context, ep *endpoint) (string, error) {
	var v string
	err := c.do(ctx, &call{method: http.MethodGet, path: pathVersion, pin: ep, maxAttempts: 1, timeout: c.probeTimeout(),
		accept: func(e *APIError) bool { return e.Status == http.StatusNotFound },
		handle: func(b []byte) error {
			var r struct {
				Version string `json:"version"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%w: decoding /version: %v", ErrBadResponse, err)
			}
			v = r.Version
			return nil
		}})
	if err != nil && !strings.Contains(err.Error(), ep.name) {
		err = fmt.Errorf("%s: %w", ep.name, err)
	}
	return v, err
}

// modelsOn lists the models one endpoint serves.
func (c *Client) modelsOn(ctx context.Context, ep *endpoint) ([]string, error) {
	var ids []string
	err := c.do(ctx, &call{method: http.MethodGet, path: pathModels, pin: ep, maxAttempts: 1, timeout: c.probeTimeout(),
		handle: func(b []byte) error {
			var r modelList
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%w: decoding the model list: %v", ErrBadResponse, err)
			}
			for _, m := range r.Data {
				ids = append(ids, m.ID)
			}
			return nil
		}})
	if err != nil && !strings.Contains(err.Error(), ep.name) {
		err = fmt.Errorf("%s: %w", ep.name, err)
	}
	return ids, err
}

// tooOld reports whether a vLLM version string ("0.9.2", "0.10.1.1",
// "0.11.0+sim", "0.10.2rc1.dev3+g1234") is older than minVLLM. A version
// it cannot read is not judged.
func tooOld(v string) bool {
	var got [3]int
	parts := strings.SplitN(v, ".", 4)
	if len(parts) < 2 {
		return false
	}
	for i := 0; i < 3 && i < len(parts); i++ {
		p := parts[i]
		end := 0
		for end < len(p) && p[end] >= '0' && p[end] <= '9' {
			end++
		}
		n, err := strconv.Atoi(p[:end])
		if err != nil {
			if i < 2 {
				return false
			}
			break
		}
		got[i] = n
	}
	for i := range got {
		if got[i] != minVLLM[i] {
			return got[i] < minVLLM[i]
		}
	}
	return false
}
