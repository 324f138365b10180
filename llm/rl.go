package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/parleyhq/parley/internal/crashpoint"
	"go.uber.org/zap"
)

// vLLM's RL routes (vllm/entrypoints/rl/online/api_router.py) and dev
// routes (vllm/entrypoints/serve/dev/), served with VLLM_SERVER_DEV_MODE=1.
const (
	pathPause               = "/pause"
	pathResume              = "/resume"
	pathIsPaused            = "/is_paused"
	pathCollectiveRPC       = "/collective_rpc"
	pathUpdateWeightVersion = "/update_weight_version"
	pathWeightInfo          = "/weight_info"
	pathWeightChecker       = "/weight_checker"
	pathResetPrefixCache    = "/reset_prefix_cache"
	pathWorldSize           = "/get_world_size"
	pathInitWeightTransfer  = "/init_weight_transfer_engine"
)

// Pause modes of POST /pause: abort the requests in flight, wait for them
// to finish, or keep them frozen and resume them on the new weights.
const (
	PauseAbort = "abort"
	PauseWait  = "wait"
	PauseKeep  = "keep"
)

// PauseModes lists the pause modes.
var PauseModes = []string{PauseAbort, PauseWait, PauseKeep}

// ErrNoRLRoutes: the server has none of vLLM's weight-update routes.
var ErrNoRLRoutes = errors.New("the server has no weight-update routes (/pause, /collective_rpc, /weight_info)")

// fixRLRoutes is how to serve them.
const fixRLRoutes = "start vLLM 0.32 or later with VLLM_SERVER_DEV_MODE=1 (python -m parley_trainer.serve_vllm --full-weights " +
	"sets it and leaves out --enable-lora), or train a LoRA adapter (trainer.full_finetune: false)"

// rlCause names a missing route: a 404 from a server without the dev mode.
func rlCause(e *APIError) error {
	if e.Status == http.StatusNotFound || e.Status == http.StatusMethodNotAllowed {
		return &CauseError{Cause: ErrNoRLRoutes, Err: e, Fix: fixRLRoutes}
	}
	return engineDead(e)
}

// rlCall runs one RL call on ep, its answer to handle.
func (c *Client) rlCall(ctx context.Context, ep *endpoint, method, path string, body any, timeout time.Duration, handle func([]byte) error) error {
	var b []byte
	if body != nil {
		var err error
		if b, err = json.Marshal(body); err != nil {
			return err
		}
	}
	return c.do(ctx, &call{method: method, path: path, body: b, pin: ep, timeout: timeout, handle: handle, classify: rlCause})
}

// CheckWeightUpdates checks, changing nothing, that every endpoint serves
// the routes a full-weights update uses (GET /is_paused and GET
// /weight_info): a server without VLLM_SERVER_DEV_MODE=1 fails with
// ErrNoRLRoutes and the fix, before a run trains anything.
func (c *Client) CheckWeightUpdates(ctx context.Context) error {
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		for _, p := range []string{pathIsPaused, pathWeightInfo} {
			if err := c.rlCall(ctx, ep, http.MethodGet, p, nil, c.probeTimeout(), nil); err != nil {
				return err
			}
		}
		return nil
	})
	return summarize("llm.CheckWeightUpdates", "cannot update full weights", errs)
}

// Pause pauses generation on every endpoint (POST /pause?mode=).
func (c *Client) Pause(ctx context.Context, mode string) error {
	path := pathPause + "?mode=" + url.QueryEscape(mode)
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodPost, path, nil, 0, nil)
	})
	return summarize("llm.Pause", "did not pause", errs)
}

// Resume resumes generation on every endpoint (POST /resume); an endpoint
// not paused counts as success.
func (c *Client) Resume(ctx context.Context) error {
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodPost, pathResume, nil, 0, nil)
	})
	return summarize("llm.Resume", "did not resume", errs)
}

// Paused reports, per endpoint, whether generation is paused (GET
// /is_paused).
func (c *Client) Paused(ctx context.Context) ([]bool, error) {
	eps := c.endpoints()
	out := make([]bool, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodGet, pathIsPaused, nil, c.probeTimeout(), func(b []byte) error {
			var r struct {
				IsPaused *bool `json:"is_paused"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.IsPaused == nil {
				return fmt.Errorf("%s%s: %w: %s", ep.name, pathIsPaused, ErrBadResponse, clip(string(b)))
			}
			out[i] = *r.IsPaused
			return nil
		})
	})
	return out, summarize("llm.Paused", "failed", errs)
}

// ReloadWeights makes every endpoint reload its weights in place from the
// folder path (as the server sees it) of safetensors files: POST
// /collective_rpc {"method": "reload_weights", "kwargs": {"weights_path":
// path}}, one endpoint after another (timeout bounds each). Pause the
// endpoints first, and check the folder's tensors against the served
// model's first: vLLM 0.32's engine dies on a folder whose shapes differ.
func (c *Client) ReloadWeights(ctx context.Context, path string, timeout time.Duration) error {
	body := map[string]any{"method": "reload_weights", "kwargs": map[string]string{"weights_path": path}}
	if timeout > 0 {
		body["timeout"] = timeout.Seconds()
	}
	for _, ep := range c.endpoints() {
		if err := c.rlCall(ctx, ep, http.MethodPost, pathCollectiveRPC, body, timeout, nil); err != nil {
			return fmt.Errorf("llm.ReloadWeights from %s: %w", path, err)
		}
		c.log.Info("llm: weights reloaded", zap.String("endpoint", ep.name), zap.String("path", path))
		crashpoint.Hit("reload-endpoint") // this endpoint has the new weights, the next ones not
	}
	return nil
}

// SetWeightVersion sets every endpoint's weight version (POST
// /update_weight_version).
func (c *Client) SetWeightVersion(ctx context.Context, version string) error {
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodPost, pathUpdateWeightVersion, map[string]string{"new_version": version}, 0, nil)
	})
	return summarize("llm.SetWeightVersion", "did not take version "+version, errs)
}

// WeightVersions returns every endpoint's weight version (GET
// /weight_info; "" where the server has none).
func (c *Client) WeightVersions(ctx context.Context) ([]string, error) {
	eps := c.endpoints()
	out := make([]string, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodGet, pathWeightInfo, nil, c.probeTimeout(), func(b []byte) error {
			var r struct {
				Version *string `json:"weight_version"`
			}
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%s%s: %w: %s", ep.name, pathWeightInfo, ErrBadResponse, clip(string(b)))
			}
			if r.Version != nil {
				out[i] = *r.Version
			}
			return nil
		})
	})
	return out, summarize("llm.WeightVersions", "failed", errs)
}

// WeightChecksums returns every endpoint's checksums of its weights as the
// engine holds them (POST /weight_checker {"action": "checksum"}): sha256
// per runtime parameter, keyed "dpD:ppP:pcpC:tpT:name".
func (c *Client) WeightChecksums(ctx context.Context) ([]map[string]string, error) {
	eps := c.endpoints()
	out := make([]map[string]string, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodPost, pathWeightChecker, map[string]string{"action": "checksum"}, 0, func(b []byte) error {
			var r struct {
				Checksums map[string]string `json:"checksums"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.Checksums == nil {
				return fmt.Errorf("%s%s: %w: %s", ep.name, pathWeightChecker, ErrBadResponse, clip(string(b)))
			}
			out[i] = r.Checksums
			return nil
		})
	})
	return out, summarize("llm.WeightChecksums", "failed", errs)
}

// resetAttempts bounds the tries of a prefix-cache reset that the server
// refuses while requests still hold blocks.
const resetAttempts = 20

// ResetPrefixCache empties every endpoint's prefix cache (POST
// /reset_prefix_cache), so that no request reuses blocks computed with
// earlier weights. The server answers success false while running requests
// hold blocks; it is asked again (with backoff) until it succeeds.
func (c *Client) ResetPrefixCache(ctx context.Context) error {
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		wait := 50 * time.Millisecond
		for try := 1; ; try++ {
			ok := false
			err := c.rlCall(ctx, ep, http.MethodPost, pathResetPrefixCache, nil, 0, func(b []byte) error {
				var r struct {
					Success bool `json:"success"`
				}
				if err := json.Unmarshal(b, &r); err != nil {
					return fmt.Errorf("%s%s: %w: %s", ep.name, pathResetPrefixCache, ErrBadResponse, clip(string(b)))
				}
				ok = r.Success
				return nil
			})
			switch {
			case err != nil:
				return err
			case ok:
				return nil
			case try == resetAttempts:
				return fmt.Errorf("%s%s: the server refused %d times (requests still hold cache blocks): pause the server before the reset", ep.name, pathResetPrefixCache, try)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
			wait = min(2*wait, 2*time.Second)
		}
	})
	return summarize("llm.ResetPrefixCache", "did not reset", errs)
}

// WorldSizes returns every endpoint's world size without data parallelism
// (GET /get_world_size?include_dp=false): the NCCL ranks its workers take
// in a weight broadcast.
func (c *Client) WorldSizes(ctx context.Context) ([]int, error) {
	eps := c.endpoints()
	out := make([]int, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodGet, pathWorldSize+"?include_dp=false", nil, c.probeTimeout(), func(b []byte) error {
			var r struct {
				WorldSize int `json:"world_size"`
			}
			if err := json.Unmarshal(b, &r); err != nil || r.WorldSize <= 0 {
				return fmt.Errorf("%s%s: %w: %s", ep.name, pathWorldSize, ErrBadResponse, clip(string(b)))
			}
			out[i] = r.WorldSize
			return nil
		})
	})
	return out, summarize("llm.WorldSizes", "failed", errs)
}

// ErrNoWeightTransfer: the server was started without the weight transfer
// backend a transfer asks for.
var ErrNoWeightTransfer = errors.New("the server has no weight transfer engine of that backend")

// CheckWeightTransfer checks that every endpoint has the routes of an NCCL
// weight transfer (/get_world_size, /init_weight_transfer_engine): a server
// without the dev mode fails with ErrNoRLRoutes. Whether the backend itself
// is configured (vLLM's --weight-transfer-config '{"backend": "nccl"}') is
// only known when the trainer initialises the engine; its error names it.
func (c *Client) CheckWeightTransfer(ctx context.Context) error {
	if _, err := c.WorldSizes(ctx); err != nil {
		return err
	}
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		// A GET on the POST-only route: 405 where it exists, 404 where not.
		err := c.do(ctx, &call{method: http.MethodGet, path: pathInitWeightTransfer, pin: ep, maxAttempts: 1, timeout: c.probeTimeout(),
			accept: func(e *APIError) bool { return e.Status == http.StatusMethodNotAllowed }, classify: rlCause})
		return err
	})
	return summarize("llm.CheckWeightTransfer", "cannot take an NCCL weight transfer", errs)
}

// VersionString is the weight version parley gives the weights trained on
// step.
func VersionString(step int) string { return strconv.Itoa(step) }

// PromptLogprobs returns, per endpoint, the logprob of each token of ids
// given those before it (NaN for the first), at temperature 1: POST
// /v1/completions with prompt_logprobs 0 and a cache_salt (salt) so that
// no cached block answers. It checks what an engine computes with the
// weights it holds.
func (c *Client) PromptLogprobs(ctx context.Context, model string, ids []int32, salt string) ([][]float64, error) {
	body := map[string]any{"model": model, "prompt": ids, "max_tokens": 1, "temperature": 1, "prompt_logprobs": 0, "cache_salt": salt}
	eps := c.endpoints()
	out := make([][]float64, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		return c.rlCall(ctx, ep, http.MethodPost, pathCompletions, body, 0, func(b []byte) error {
			var r struct {
				Choices []struct {
					PromptLogprobs []map[string]struct {
						Logprob float64 `json:"logprob"`
					} `json:"prompt_logprobs"`
				} `json:"choices"`
			}
			if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 || len(r.Choices[0].PromptLogprobs) != len(ids) {
				return fmt.Errorf("%s%s: %w: no prompt_logprobs for %d tokens", ep.name, pathCompletions, ErrBadResponse, len(ids))
			}
			lps := make([]float64, len(ids))
			for t, m := range r.Choices[0].PromptLogprobs {
				lps[t] = math.NaN()
				if e, ok := m[strconv.Itoa(int(ids[t]))]; ok {
					lps[t] = e.Logprob
				}
			}
			out[i] = lps
			return nil
		})
	})
	return out, summarize("llm.PromptLogprobs", "failed", errs)
}
