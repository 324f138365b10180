package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

const (
	pathHealth     = "/health"
	pathMetrics    = "/metrics"
	pathLoadLoRA   = "/v1/load_lora_adapter"
	pathUnloadLoRA = "/v1/unload_lora_adapter"
)

// EndpointErrors collects the failures of a call made on every endpoint;
// each element names its endpoint.
type EndpointErrors []error

// Error lists the failures on one line.
func (e EndpointErrors) Error() string {
	parts := make([]string, len(e))
	for i, err := range e {
		parts[i] = err.Error()
	}
	return strings.Join(parts, "; ")
}

// Unwrap returns the failures, for errors.Is and errors.As.
func (e EndpointErrors) Unwrap() []error { return e }

// onEvery runs fn on every endpoint of eps concurrently and returns the
// errors in endpoint order (nil entries for successes).
func (c *Client) onEvery(eps []*endpoint, fn func(i int, ep *endpoint) error) []error {
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fn(i, ep)
		}()
	}
	wg.Wait()
	return errs
}

// summarize turns per-endpoint errors into one error, or nil.
func summarize(op, what string, errs []error) error {
	var failed EndpointErrors
	for _, err := range errs {
		if err != nil {
			failed = append(failed, err)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d of %d endpoints %s: %w", op, len(failed), len(errs), what, failed)
}

// Health checks GET /health on every endpoint once. An endpoint that fails
// is taken out of rotation until a later check passes (or, without
// background checks, for DownFor); one that passes is put back. The error
// names every failing endpoint.
func (c *Client) Health(ctx context.Context) error {
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error { return c.checkHealth(ctx, ep) })
	return summarize("llm.Health", "unhealthy", errs)
}

func (c *Client) checkHealth(ctx context.Context, ep *endpoint) error {
	err := c.do(ctx, &call{method: http.MethodGet, path: pathHealth, pin: ep, maxAttempts: 1, timeout: c.probeTimeout()})
	if err == nil {
		c.markUp(ep)
		return nil
	}
	if ctx.Err() == nil {
		hold := max(c.opts.DownFor, 2*c.opts.HealthInterval)
		c.markDown(ep, time.Now().Add(hold).UnixNano(), "health check failed", err)
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		return err // already names the endpoint
	}
	if strings.Contains(err.Error(), ep.name) {
		return err
	}
	return fmt.Errorf("%s: %w", ep.name, err)
}

// probeTimeout bounds one health or metrics probe.
func (c *Client) probeTimeout() time.Duration {
	return min(c.opts.RequestTimeout, 10*time.Second)
}

// EndpointMetrics is the load one endpoint reports on GET /metrics.
type EndpointMetrics struct {
	Endpoint string  // the endpoint's base URL
	Running  float64 // vllm:num_requests_running, summed over label sets
	Waiting  float64 // vllm:num_requests_waiting, summed over label sets
	// PrefixCacheQueries and PrefixCacheHits are vllm:prefix_cache_queries_total
	// and vllm:prefix_cache_hits_total: prompt tokens looked up in the
	// prefix cache and found, since the server started (0 when absent).
	PrefixCacheQueries, PrefixCacheHits float64
	// NoSessionHeader counts the completions that reached the server
	// without the session header, where the server reports it (serve-sim
	// does; vLLM does not): a router in front that strips the header.
	NoSessionHeader float64
	Err             error // why this endpoint's metrics are missing, if they are
}

// Metrics reads vllm:num_requests_running and vllm:num_requests_waiting, and
// the prefix cache's counters, from every endpoint's Prometheus /metrics. It returns one entry per endpoint,
// in order; when some endpoints fail, their entries carry Err and the error
// names them.
func (c *Client) Metrics(ctx context.Context) ([]EndpointMetrics, error) {
	eps := c.endpoints()
	out := make([]EndpointMetrics, len(eps))
	errs := c.onEvery(eps, func(i int, ep *endpoint) error {
		out[i].Endpoint = ep.name
		err := c.do(ctx, &call{method: http.MethodGet, path: pathMetrics, pin: ep, maxAttempts: 1, timeout: c.probeTimeout(),
			handle: func(b []byte) error {
				m, err := parseVLLMLoad(b)
				if err != nil {
					return err
				}
				out[i].Running, out[i].Waiting = m.Running, m.Waiting
				out[i].PrefixCacheQueries, out[i].PrefixCacheHits = m.PrefixQueries, m.PrefixHits
				out[i].NoSessionHeader = m.NoSessionHeader
				return nil
			}})
		if err != nil && !strings.Contains(err.Error(), ep.name) {
			err = fmt.Errorf("%s: %w", ep.name, err)
		}
		out[i].Err = err
		return err
	})
	return out, summarize("llm.Metrics", "failed", errs)
}

type loadLoRARequest struct {
	Name string `json:"lora_name"`
	Path string `json:"lora_path"`
}

type unloadLoRARequest struct {
	Name string `json:"lora_name"`
}

// LoadLoRA loads the adapter at path (as the server sees it) under name on
// every endpoint (POST /v1/load_lora_adapter). An endpoint that already has
// the name loaded counts as success, so a resumed run can repeat the call.
// The server needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and --enable-lora:
// a server without either, an adapter path the server cannot see and a rank
// above --max-lora-rank each fail at once with a *CauseError naming the
// fix (ErrLoRADisabled, ErrAdapterNotFound, ErrLoRARank). An endpoint it
// cannot reach (after its retries) while others load the adapter is lost:
// out of rotation, with a warning, until it answers again and has loaded
// every adapter (Lost, Rediscover).
func (c *Client) LoadLoRA(ctx context.Context, name, path string) error {
	if name == "" || path == "" {
		return errors.New("llm.LoadLoRA: name and path are both required")
	}
	body, err := json.Marshal(loadLoRARequest{Name: name, Path: path})
	if err != nil {
		return fmt.Errorf("llm.LoadLoRA: %w", err)
	}
	return c.trackAdapters(name, path, func() error {
		eps := c.endpoints()
		errs := c.onEvery(eps, func(_ int, ep *endpoint) error { return c.loadOnBody(ctx, ep, name, path, body) })
		errs = c.loseUnreachable(ctx, "loading adapter "+name, eps, errs)
		return summarize("llm.LoadLoRA", "failed to load "+name+" from "+path, errs)
	})
}

// loadOn loads adapter name from path on ep.
func (c *Client) loadOn(ctx context.Context, ep *endpoint, name, path string) error {
	body, err := json.Marshal(loadLoRARequest{Name: name, Path: path})
	if err != nil {
		return err
	}
	return c.loadOnBody(ctx, ep, name, path, body)
}

// loadOnBody sends the load request body to ep.
func (c *Client) loadOnBody(ctx context.Context, ep *endpoint, name, path string, body []byte) error {
	already := false
	err := c.do(ctx, &call{method: http.MethodPost, path: pathLoadLoRA, body: body, pin: ep,
		accept: func(e *APIError) bool {
			already = isAlreadyLoaded(e)
			return already
		},
		classify: loraCause})
	if err != nil {
		return err
	}
	c.log.Info("llm: LoRA adapter loaded", zap.String("endpoint", ep.name),
		zap.String("name", name), zap.String("path", path), zap.Bool("already_loaded", already))
	return nil
}

// UnloadLoRA unloads the adapter name from every endpoint (POST
// /v1/unload_lora_adapter). An endpoint that does not have it counts as
// success.
func (c *Client) UnloadLoRA(ctx context.Context, name string) error {
	if name == "" {
		return errors.New("llm.UnloadLoRA: name is required")
	}
	body, err := json.Marshal(unloadLoRARequest{Name: name})
	if err != nil {
		return fmt.Errorf("llm.UnloadLoRA: %w", err)
	}
	return c.trackAdapters(name, "", func() error {
		eps := c.endpoints()
		errs := c.onEvery(eps, func(_ int, ep *endpoint) error {
			err := c.do(ctx, &call{method: http.MethodPost, path: pathUnloadLoRA, body: body, pin: ep,
				accept: isAdapterNotFound, classify: loraCause})
			if err != nil {
				return err
			}
			c.log.Info("llm: LoRA adapter unloaded", zap.String("endpoint", ep.name), zap.String("name", name))
			return nil
		})
		errs = c.loseUnreachable(ctx, "unloading adapter "+name, eps, errs)
		return summarize("llm.UnloadLoRA", "failed to unload "+name, errs)
	})
}

// The adapter CheckLoRA asks a server to load: a path no server has.
const (
	loraCheckName = "parley-lora-check"
	loraCheckPath = "/nonexistent/parley-lora-check"
)

// CheckLoRA checks, without an adapter, that every endpoint can load LoRA
// adapters at run time, so that a server started without
// VLLM_ALLOW_RUNTIME_LORA_UPDATING=True or --enable-lora is named before a
// run samples and trains its first step, not when that step's adapter is
// loaded. It asks each endpoint, once, to load an adapter from a path that
// does not exist: "No adapter found" is the answer of a server that can
// (the route exists and the engine tried); a missing route or "LoRA is not
// enabled" fail with ErrLoRADisabled and the fix. A server that loads it
// anyway (serve-sim checks no paths) has it unloaded. Other answers are
// logged and not judged: the first real load will be.
func (c *Client) CheckLoRA(ctx context.Context) error {
	load, err := json.Marshal(loadLoRARequest{Name: loraCheckName, Path: loraCheckPath})
	if err != nil {
		return fmt.Errorf("llm.CheckLoRA: %w", err)
	}
	unload, err := json.Marshal(unloadLoRARequest{Name: loraCheckName})
	if err != nil {
		return fmt.Errorf("llm.CheckLoRA: %w", err)
	}
	errs := c.onEvery(c.endpoints(), func(_ int, ep *endpoint) error {
		err := c.do(ctx, &call{method: http.MethodPost, path: pathLoadLoRA, body: load, pin: ep, maxAttempts: 1,
			timeout: c.probeTimeout(), accept: isAlreadyLoaded, classify: loraCause})
		switch {
		case err == nil:
			if uerr := c.do(ctx, &call{method: http.MethodPost, path: pathUnloadLoRA, body: unload, pin: ep, maxAttempts: 1,
				timeout: c.probeTimeout(), accept: isAdapterNotFound}); uerr != nil {
				c.log.Warn("llm: could not unload the LoRA check's adapter", zap.String("endpoint", ep.name), zap.Error(uerr))
			}
			return nil
		case errors.Is(err, ErrAdapterNotFound):
			return nil
		case errors.Is(err, ErrLoRADisabled):
			return err
		}
		c.log.Warn("llm: could not tell whether the server loads LoRA adapters at run time", zap.String("endpoint", ep.name), zap.Error(err))
		return nil
	})
	return summarize("llm.CheckLoRA", "cannot load LoRA adapters", errs)
}

// isAlreadyLoaded recognises vLLM's 400 "The lora adapter 'x' has already
// been loaded."
func isAlreadyLoaded(e *APIError) bool {
	m := strings.ToLower(e.Message)
	return e.Status == http.StatusBadRequest && strings.Contains(m, "already") && strings.Contains(m, "loaded")
}

// isAdapterNotFound recognises vLLM's "The lora adapter 'x' cannot be
// found." (404; 400 in some versions), but not a 404 for a missing route.
func isAdapterNotFound(e *APIError) bool {
	if e.Status != http.StatusNotFound && e.Status != http.StatusBadRequest {
		return false
	}
	m := strings.ToLower(e.Message)
	return strings.Contains(m, "adapter") &&
		(strings.Contains(m, "cannot be found") || strings.Contains(m, "not found") || strings.Contains(m, "does not exist"))
}
