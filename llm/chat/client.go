// Package chat is parley's one OpenAI-compatible chat client, behind every
// LLM judge (reward) and the curriculum generator (dataset/generate):
// bounded concurrency, request and token rate limits, retries with jittered
// backoff that honour Retry-After, the temperature always on the wire,
// API-key redaction in errors and, for cached calls (Ask), a persistent
// cache keyed by model and prompt hash with de-duplication of identical
// requests in flight, and counters a run reads per step (Stats, Since:
// calls, attempts, retries, 429s, tokens, cached tokens, latencies and the
// model and system fingerprint that answered). It speaks to any
// OpenAI-compatible endpoint through go-openai; the vLLM policy's
// token-level API is package llm's.
package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/retry"
	openai "github.com/sashabaranov/go-openai"
	"go.uber.org/zap"
	"golang.org/x/sync/singleflight"
	"golang.org/x/time/rate"
)

// Defaults applied by the judge constructors to zero Options fields.
const (
	DefaultConcurrency = 8
	DefaultTimeout     = 120 * time.Second
	DefaultMaxTokens   = 1024
)

// Options configure an OpenAI-compatible chat client: the one behind
// the rubric and pairwise judges, and the curriculum generator's (see
// New). Zero values take the defaults above.
type Options struct {
	// Name names the client in logs and errors: "judge" (the default),
	// "generator", ….
	Name string
	// BaseURL is the OpenAI-compatible API root, e.g.
	// "https://api.openai.com/v1" (the default) or "http://host:8000/v1".
	BaseURL string
	// Model is the judge model name (required).
	Model string
	// APIKey is sent as a bearer token. The caller reads it from the
	// environment variable named in the config; it is never logged, cached
	// or included in errors.
	APIKey string
	// Concurrency bounds the judge requests in flight.
	Concurrency int
	// RequestsPerMinute and TokensPerMinute limit the request rate; 0 means
	// unlimited. Tokens are estimated as prompt characters/4 + MaxTokens.
	// The limiters allow a burst of a tenth of a minute's budget.
	RequestsPerMinute int
	TokensPerMinute   int
	// Retry is the retry policy for transient failures (429, 408, 409,
	// 5xx, timeouts, transport errors, unparseable or out-of-range
	// verdicts, refusals); a server's Retry-After, when longer than the
	// backoff, is honoured. Zero fields take retry.Default's; a negative
	// MaxRetries makes a single attempt.
	Retry retry.Policy
	// Timeout bounds each request attempt.
	Timeout time.Duration
	// MaxTokens is the completion token limit sent as max_completion_tokens.
	MaxTokens int
	// Temperature is the sampling temperature sent with every request
	// unless a Request overrides it. It is always written into the
	// request body, 0 included (go-openai would drop a zero). The judges
	// want 0, the zero value.
	Temperature float64
	// CacheDir is the run directory holding judge-cache.jsonl; "" disables
	// the cache. Only the judges use it: Client.Chat never caches.
	CacheDir string
	// DisableStructuredOutput stops sending response_format json_schema,
	// for endpoints that do not support it; replies are then parsed
	// tolerantly. Structured output is on by default.
	DisableStructuredOutput bool
	// Logger receives retry warnings; nil means no logging.
	Logger *zap.Logger
	// HTTPClient is the HTTP client; nil means a new http.Client.
	HTTPClient *http.Client
	// Sleep waits d or until ctx is done, between attempts; nil means a
	// real timer (tests replace it).
	Sleep func(ctx context.Context, d time.Duration) error
	// Observe, if set, is told of every request sent (cache hits are not
	// requests): its time from the first attempt to the last, retries
	// included, and its error (nil when it succeeded). It feeds parley
	// train's /metrics.
	Observe func(elapsed time.Duration, err error)
}

// withDefaults returns o with defaults applied.
func (o Options) withDefaults() Options {
	if o.Name == "" {
		o.Name = "judge"
	}
	if o.BaseURL == "" {
		o.BaseURL = "https://api.openai.com/v1"
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	o.Retry = o.Retry.WithDefaults(retry.Default)
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = DefaultMaxTokens
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	if o.Sleep == nil {
		o.Sleep = retry.Sleep
	}
	return o
}

// String describes the options without the API key.
func (o Options) String() string {
	key := "unset"
	if o.APIKey != "" {
		key = "set"
	}
	return fmt.Sprintf("{Name:%s BaseURL:%s Model:%s APIKey:%s Concurrency:%d RPM:%d TPM:%d MaxRetries:%d Timeout:%s Temperature:%g CacheDir:%s}",
		o.Name, o.BaseURL, o.Model, key, o.Concurrency, o.RequestsPerMinute, o.TokensPerMinute, o.Retry.MaxRetries, o.Timeout, o.Temperature, o.CacheDir)
}

// Client is parley's one OpenAI-compatible chat client, behind every
// LLM judge and the curriculum generator: bounded concurrency, request and
// token rate limits, retries with jittered backoff that honour Retry-After,
// the temperature always on the wire, API-key redaction in errors and, for
// the judges, the persistent cache and de-duplication of identical
// requests. Safe for concurrent use.
type Client struct {
	opts   Options
	client *openai.Client
	sem    chan struct{}
	rpm    *rate.Limiter // nil when unlimited
	tpm    *rate.Limiter // nil when unlimited
	cache  *cache        // nil when disabled
	group  singleflight.Group
	log    *zap.Logger
	stats  counters
	// sleep waits d or until ctx is done; replaced in tests.
	sleep func(ctx context.Context, d time.Duration) error
}

// New returns a chat client; zero options take the defaults. With
// a CacheDir it opens the judge cache (used by the judges only); call Close
// when done.
func New(opts Options) (*Client, error) {
	c, err := newClient(opts.withDefaults())
	if err != nil {
		return nil, fmt.Errorf("reward.New: %w", err)
	}
	return c, nil
}

// newClient builds the client; opts must already have defaults.
func newClient(opts Options) (*Client, error) {
	if opts.Model == "" {
		return nil, errors.New("model is required")
	}
	cfg := openai.DefaultConfig(opts.APIKey)
	cfg.BaseURL = opts.BaseURL
	cfg.HTTPClient = &doer{client: opts.HTTPClient}
	c := &Client{
		opts:   opts,
		client: openai.NewClientWithConfig(cfg),
		sem:    make(chan struct{}, opts.Concurrency),
		log:    opts.Logger,
		sleep:  opts.Sleep,
	}
	if opts.RequestsPerMinute > 0 {
		c.rpm = rate.NewLimiter(rate.Limit(float64(opts.RequestsPerMinute)/60), max(1, opts.RequestsPerMinute/10))
	}
	if opts.TokensPerMinute > 0 {
		c.tpm = rate.NewLimiter(rate.Limit(float64(opts.TokensPerMinute)/60), max(1, opts.TokensPerMinute/10))
	}
	if opts.CacheDir != "" {
		ch, err := openCache(opts.CacheDir)
		if err != nil {
			return nil, err
		}
		if ch.skipped > 0 {
			c.log.Warn("judge cache: skipped unreadable lines", zap.Int("lines", ch.skipped))
		}
		c.cache = ch
	}
	return c, nil
}

// Model returns the model the client asks.
func (c *Client) Model() string { return c.opts.Model }

// Close releases the cache file, if any.
func (c *Client) Close() error { return c.close() }

// close releases the cache file.
func (c *Client) close() error {
	if c.cache == nil {
		return nil
	}
	return c.cache.close()
}

// Message is one message of a chat request.
type Message struct {
	// Role is system, user or assistant.
	Role    string
	Content string
}

// Request is one chat completion to ask for.
type Request struct {
	// Messages is the conversation, system message first if any.
	Messages []Message
	// SchemaName and Schema, when SchemaName is set, ask for structured
	// output (response_format json_schema, strict: the schema must list
	// every property as required and forbid additional ones). They are
	// not sent when the client's DisableStructuredOutput is set.
	SchemaName string
	Schema     json.RawMessage
	// Temperature overrides the client's temperature when not nil.
	Temperature *float64
	// Seed, when not nil, is sent as the request's seed.
	Seed *int64
	// MaxTokens overrides the client's MaxTokens when positive.
	MaxTokens int
	// Validate, when not nil, checks the reply content; a reply it rejects
	// is retried like a transient failure and, when the retries run out,
	// the error matches ErrInvalidReply and wraps Validate's error.
	Validate func(content string) error
}

// Response is the reply to a Request.
type Response struct {
	// Content is the assistant message's text.
	Content string
	// FinishReason is the server's finish_reason (stop, length, …).
	FinishReason string
	// PromptTokens and CompletionTokens are the reported usage of the
	// attempt that succeeded.
	PromptTokens     int
	CompletionTokens int
	// Backend is the model and system fingerprint the API reported.
	Backend Backend
}

// ErrInvalidReply is matched (errors.Is) by a Chat failure whose last
// reply was empty, a refusal, or rejected by Request.Validate.
var ErrInvalidReply = errors.New("invalid chat reply")

// invalidReplyError is a reply Chat could not use; it is retried.
type invalidReplyError struct{ err error }

func (e *invalidReplyError) Error() string        { return e.err.Error() }
func (e *invalidReplyError) Unwrap() error        { return e.err }
func (e *invalidReplyError) Is(target error) bool { return target == ErrInvalidReply }

// Chat sends one chat completion with retries, under the client's
// concurrency bound and rate limits, and returns the reply. It never uses
// the judge cache. The API key never appears in the error.
func (c *Client) Chat(ctx context.Context, req Request) (Response, error) {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	chars := 0
	for i, m := range req.Messages {
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
		chars += len(m.Content)
	}
	maxTokens := c.opts.MaxTokens
	if req.MaxTokens > 0 {
		maxTokens = req.MaxTokens
	}
	oreq := openai.ChatCompletionRequest{Model: c.opts.Model, Messages: msgs, MaxCompletionTokens: maxTokens}
	if req.Seed != nil {
		seed := int(*req.Seed)
		oreq.Seed = &seed
	}
	if req.SchemaName != "" && !c.opts.DisableStructuredOutput {
		oreq.ResponseFormat = jsonSchemaFormat(req.SchemaName, req.Schema)
	}
	temperature := c.opts.Temperature
	if req.Temperature != nil {
		temperature = *req.Temperature
	}
	v, err := c.send(ctx, exchange{
		req:         oreq,
		temperature: temperature,
		tokens:      chars/4 + maxTokens,
		parse: func(reply Reply) (any, error) {
			if strings.TrimSpace(reply.Content) == "" {
				if reply.Refusal != "" {
					return nil, &invalidReplyError{fmt.Errorf("refusal: %s", reply.Refusal)}
				}
				return nil, &invalidReplyError{fmt.Errorf("empty reply (finish reason %q)", reply.FinishReason)}
			}
			if req.Validate != nil {
				if err := req.Validate(reply.Content); err != nil {
					return nil, &invalidReplyError{fmt.Errorf("reply rejected (finish reason %q): %w", reply.FinishReason, err)}
				}
			}
			return Response{
				Content:          reply.Content,
				FinishReason:     reply.FinishReason,
				PromptTokens:     reply.PromptTokens,
				CompletionTokens: reply.CompletionTokens,
				Backend:          reply.Backend,
			}, nil
		},
	})
	if err != nil {
		return Response{}, fmt.Errorf("reward.Client.Chat: %w", err)
	}
	return v.(Response), nil
}

// jsonSchemaFormat is a strict json_schema response format.
func jsonSchemaFormat(name string, schema json.RawMessage) *openai.ChatCompletionResponseFormat {
	return &openai.ChatCompletionResponseFormat{
		Type: openai.ChatCompletionResponseFormatTypeJSONSchema,
		JSONSchema: &openai.ChatCompletionResponseFormatJSONSchema{
			Name:   name,
			Schema: schema,
			Strict: true,
		},
	}
}

// Call is one cached question (a judge's): a system and a user message,
// answered at the client's temperature and parsed into a verdict that is
// cached under the model and the whole prompt.
type Call struct {
	System, User string
	// Version names the prompt version; it is part of the cache key.
	Version string
	// SchemaName and Schema describe the structured output.
	SchemaName string
	Schema     json.RawMessage
	// Parse turns a reply into the verdict to cache; an error made by
	// NoVerdict is retried like a transient failure, any other ends the
	// call.
	Parse func(reply Reply) (any, error)
}

// Reply is what the API returned for one attempt.
type Reply struct {
	Content, Refusal, FinishReason string
	// PromptTokens and CompletionTokens are the usage the API reported.
	PromptTokens, CompletionTokens int
	// Backend is the model and system fingerprint the API reported.
	Backend Backend
}

// Outcome is a verdict and where it came from.
type Outcome struct {
	// Value is the verdict Parse returned, JSON-encoded.
	Value json.RawMessage
	// Cached reports that the verdict came from the cache or from an
	// identical request in flight, and cost nothing this time.
	Cached bool
}

// prompt renders the full prompt hashed into the cache key.
func (call Call) prompt(structured bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "version=%s\x00schema=%s\x00structured=%t\x00", call.Version, call.SchemaName, structured)
	b.WriteString(call.System)
	b.WriteByte(0)
	b.WriteString(call.User)
	return b.String()
}

// Ask answers call, from the cache when it can: identical calls in flight
// are sent once, and a verdict is cached (when the client has a CacheDir)
// once parsed.
func (c *Client) Ask(ctx context.Context, call Call) (Outcome, error) {
	structured := !c.opts.DisableStructuredOutput
	key := cacheKey(c.opts.Model, call.prompt(structured))
	if c.cache != nil {
		if v, ok := c.cache.get(key); ok {
			c.stats.cacheHit()
			return Outcome{Value: v, Cached: true}, nil
		}
	}
	ran := false // set only when this caller's function runs (the leader)
	ch := c.group.DoChan(key, func() (any, error) {
		ran = true
		v, err := c.ask(ctx, call, structured)
		if err != nil {
			return nil, err
		}
		if c.cache != nil {
			if err := c.cache.put(key, v); err != nil {
				c.log.Warn("judge cache: write failed", zap.Error(err))
			}
		}
		return v, nil
	})
	select {
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	case res := <-ch:
		if res.Err != nil {
			return Outcome{}, res.Err
		}
		// Followers of an identical in-flight request paid nothing.
		if !ran {
			c.stats.cacheHit()
		}
		return Outcome{Value: res.Val.(json.RawMessage), Cached: !ran}, nil
	}
}

// ask sends a judge question and encodes its verdict for the cache.
func (c *Client) ask(ctx context.Context, call Call, structured bool) (json.RawMessage, error) {
	req := openai.ChatCompletionRequest{
		Model: c.opts.Model,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: call.System},
			{Role: openai.ChatMessageRoleUser, Content: call.User},
		},
		MaxCompletionTokens: c.opts.MaxTokens,
	}
	if structured && call.SchemaName != "" {
		req.ResponseFormat = jsonSchemaFormat(call.SchemaName, call.Schema)
	}
	v, err := c.send(ctx, exchange{
		req:         req,
		temperature: c.opts.Temperature,
		tokens:      (len(call.System)+len(call.User))/4 + c.opts.MaxTokens,
		parse:       call.Parse,
	})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode verdict: %w", err)
	}
	return raw, nil
}

// exchange is one request as send makes it.
type exchange struct {
	req openai.ChatCompletionRequest
	// temperature is written into the request body (doer).
	temperature float64
	// tokens is the estimate charged to the token rate limit.
	tokens int
	// parse turns a reply into the result; its error is retried when
	// retryable (verdictError, invalidReplyError).
	parse func(Reply) (any, error)
}

// send runs the attempts of one request: the retry loop shared by every
// caller.
func (c *Client) send(ctx context.Context, ex exchange) (v any, err error) {
	start := time.Now()
	defer func() {
		elapsed := time.Since(start)
		c.stats.request(elapsed, err)
		if c.opts.Observe != nil {
			c.opts.Observe(elapsed, err)
		}
	}()
	return c.sendAttempts(ctx, ex)
}

// sendAttempts is send's retry loop.
func (c *Client) sendAttempts(ctx context.Context, ex exchange) (any, error) {
	var lastErr error
	for attempt := 0; attempt < c.opts.Retry.Attempts(); attempt++ {
		if attempt > 0 {
			wait := c.backoff(attempt, lastErr)
			c.log.Warn(c.opts.Name+" request failed, retrying",
				zap.String("model", c.opts.Model),
				zap.Int("attempt", attempt),
				zap.Duration("wait", wait),
				zap.String("error", lastErr.Error()))
			if err := c.sleep(ctx, wait); err != nil {
				return nil, c.redact(fmt.Errorf("%s %s: %w (last error: %v)", c.opts.Name, c.opts.Model, err, lastErr))
			}
		}
		v, err := c.attempt(ctx, ex, attempt > 0)
		if err == nil {
			return v, nil
		}
		lastErr = c.redact(err)
		if ctx.Err() != nil {
			return nil, c.redact(fmt.Errorf("%s %s: %w", c.opts.Name, c.opts.Model, err))
		}
		if !retryable(err) {
			return nil, c.redact(fmt.Errorf("%s %s: %w", c.opts.Name, c.opts.Model, err))
		}
	}
	return nil, c.redact(fmt.Errorf("%s %s: giving up after %d attempts: %w", c.opts.Name, c.opts.Model, c.opts.Retry.Attempts(), lastErr))
}

// attempt makes one request under the concurrency bound, the rate limits
// and the per-request timeout, and parses the reply.
func (c *Client) attempt(ctx context.Context, ex exchange, retry bool) (any, error) {
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.sem }()
	if c.rpm != nil {
		if err := c.rpm.Wait(ctx); err != nil {
			return nil, fmt.Errorf("rate limit: %w", err)
		}
	}
	if c.tpm != nil {
		if err := c.tpm.WaitN(ctx, min(ex.tokens, c.tpm.Burst())); err != nil {
			return nil, fmt.Errorf("token rate limit: %w", err)
		}
	}
	info := &attemptInfo{temperature: ex.temperature}
	actx, cancel := context.WithTimeout(context.WithValue(ctx, attemptKey{}, info), c.opts.Timeout)
	defer cancel()
	resp, err := c.client.CreateChatCompletion(actx, ex.req)
	c.stats.attempt(retry, &resp, err)
	if err != nil {
		if info.retryAfter > 0 {
			return nil, &retryAfterError{err: err, wait: info.retryAfter}
		}
		if actx.Err() != nil && ctx.Err() == nil {
			return nil, &timeoutError{err: err, timeout: c.opts.Timeout}
		}
		return nil, err
	}
	if len(resp.Choices) == 0 {
		return nil, &verdictError{msg: "reply has no choices"}
	}
	ch := resp.Choices[0]
	return ex.parse(Reply{
		Content:          ch.Message.Content,
		Refusal:          ch.Message.Refusal,
		FinishReason:     string(ch.FinishReason),
		PromptTokens:     resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens,
		Backend:          Backend{Model: resp.Model, Fingerprint: resp.SystemFingerprint},
	})
}

// backoff is the wait before retry number attempt (1-based): the retry
// policy's jittered backoff, or the server's Retry-After when that is
// longer (retry.Policy.Wait). The jitter draws from math/rand/v2's global
// source, which is safe for concurrent use.
func (c *Client) backoff(attempt int, lastErr error) time.Duration {
	var after time.Duration
	var ra *retryAfterError
	if errors.As(lastErr, &ra) {
		after = ra.wait
	}
	return c.opts.Retry.Wait(attempt, after, nil)
}

// maxErrorLen bounds an error message (an HTML error page can be long); the
// message is stored with every failed rollout.
const maxErrorLen = 1000

// redact removes the API key from err's message and shortens it to
// maxErrorLen bytes.
func (c *Client) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	changed := false
	if c.opts.APIKey != "" && strings.Contains(msg, c.opts.APIKey) {
		msg, changed = strings.ReplaceAll(msg, c.opts.APIKey, "[REDACTED]"), true
	}
	if len(msg) > maxErrorLen {
		msg, changed = strings.ToValidUTF8(msg[:maxErrorLen], "")+"…", true
	}
	if !changed {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

// redactedError is an error whose message had the API key removed or was
// shortened; it still unwraps to the original.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// retryAfterError is a failed attempt whose response asked for a wait.
type retryAfterError struct {
	err  error
	wait time.Duration
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.err, e.wait)
}
func (e *retryAfterError) Unwrap() error { return e.err }

// timeoutError is an attempt that ran past the per-request timeout.
type timeoutError struct {
	err     error
	timeout time.Duration
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("request timed out after %s: %v", e.timeout, e.err)
}
func (e *timeoutError) Unwrap() error { return e.err }

// verdictError is a reply that holds no valid verdict: unparseable, out of
// range, a refusal, or truncated. It is retried.
type verdictError struct {
	msg string
}

func (e *verdictError) Error() string { return e.msg }

// NoVerdict returns the error a Call's Parse gives for a reply that holds
// no valid verdict (unparseable, out of range, a refusal, truncated): it is
// retried, and matches ErrNoVerdict.
func NoVerdict(format string, args ...any) error {
	return &verdictError{msg: fmt.Sprintf(format, args...)}
}

// ErrNoVerdict is matched (errors.Is) by every failure to read a valid
// verdict from a judge reply.
var ErrNoVerdict = errors.New("no valid verdict in judge reply")

// Is makes verdictError match ErrNoVerdict.
func (e *verdictError) Is(target error) bool { return target == ErrNoVerdict }

// retryable reports whether a failed attempt may succeed on retry.
func retryable(err error) bool {
	var (
		apiErr  *openai.APIError
		reqErr  *openai.RequestError
		ra      *retryAfterError
		to      *timeoutError
		ve      *verdictError
		ir      *invalidReplyError
		netErr  net.Error
		syntax  *json.SyntaxError
		typeErr *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &ra), errors.As(err, &to), errors.As(err, &ve), errors.As(err, &ir):
		return true
	case errors.As(err, &apiErr):
		return retryableStatus(apiErr.HTTPStatusCode)
	case errors.As(err, &reqErr):
		return retryableStatus(reqErr.HTTPStatusCode)
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF),
		errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &syntax), errors.As(err, &typeErr):
		// A 200 whose body is not the expected JSON: a broken proxy or a
		// truncated response.
		return true
	}
	// Unknown transport failures (connection reset, refused) surface as
	// *url.Error wrapping syscall errors, which net.Error covers; anything
	// else is treated as permanent.
	return false
}

// retryableStatus reports whether an HTTP status is worth retrying.
func retryableStatus(code int) bool {
	switch {
	case code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code == http.StatusConflict:
		return true
	case code >= 500:
		return true
	}
	return false
}

// ErrKeyRejected is Check's error when the API answers 401 or 403: the key
// sent is wrong, or none was sent to an API that needs one.
var ErrKeyRejected = errors.New("API key rejected")

// Check makes one cheap request (GET /models) to see that the API answers
// and accepts the key, before long work: a refused connection, a 401 or a
// 403 is an error naming the fix; an API without /models (404) passes.
func (c *Client) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, min(c.opts.Timeout, 30*time.Second))
	defer cancel()
	_, err := c.client.ListModels(ctx)
	if err == nil {
		return nil
	}
	var apiErr *openai.APIError
	var reqErr *openai.RequestError
	switch {
	case errors.As(err, &apiErr) && (apiErr.HTTPStatusCode == http.StatusUnauthorized || apiErr.HTTPStatusCode == http.StatusForbidden):
		return c.redact(fmt.Errorf("%s at %s: %w (HTTP %d): set the right key in the variable the config's api_key_env names", c.opts.Name, c.opts.BaseURL, ErrKeyRejected, apiErr.HTTPStatusCode))
	case errors.As(err, &reqErr) && (reqErr.HTTPStatusCode == http.StatusUnauthorized || reqErr.HTTPStatusCode == http.StatusForbidden):
		return c.redact(fmt.Errorf("%s at %s: %w (HTTP %d): set the right key in the variable the config's api_key_env names", c.opts.Name, c.opts.BaseURL, ErrKeyRejected, reqErr.HTTPStatusCode))
	case errors.As(err, &apiErr) || errors.As(err, &reqErr):
		return nil // it answered: only the key matters here
	}
	return c.redact(fmt.Errorf("%s at %s does not answer: %w", c.opts.Name, c.opts.BaseURL, err))
}

// Cause names the kind of a failed request's error in a few words, the
// same for every error of that kind, so that a caller can count failures
// by cause and warn once per cause: "rate limited (HTTP 429)", "HTTP 503",
// "timeout", "connection", "no valid verdict", "invalid reply", "API key
// rejected", "canceled", or "other".
func Cause(err error) string {
	var (
		apiErr *openai.APIError
		reqErr *openai.RequestError
		to     *timeoutError
		netErr net.Error
		syntax *json.SyntaxError
	)
	status := 0
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, ErrKeyRejected):
		return "API key rejected"
	case errors.As(err, &apiErr):
		status = apiErr.HTTPStatusCode
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
	}
	switch {
	case status == http.StatusTooManyRequests:
		return "rate limited (HTTP 429)"
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return "API key rejected"
	case status != 0:
		return fmt.Sprintf("HTTP %d", status)
	case errors.Is(err, ErrNoVerdict):
		return "no valid verdict"
	case errors.Is(err, ErrInvalidReply), errors.As(err, &syntax):
		return "invalid reply"
	case errors.As(err, &to), errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &netErr), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "connection"
	}
	return "other"
}
