package llm

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
)

func TestErrorShapes(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		want        APIError
	}{
		{
			name: "nested (vLLM >= 0.10)", status: 400, contentType: "application/json",
			body: `{"error":{"message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}}`,
			want: APIError{Status: 400, Type: "BadRequestError", Code: "400", Message: "This model's maximum context length is 4096 tokens."},
		},
		{
			name: "flat (older vLLM)", status: 404, contentType: "application/json",
			body: `{"object":"error","message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}`,
			want: APIError{Status: 404, Type: "NotFoundError", Code: "404", Message: "The model `x` does not exist."},
		},
		{
			name: "OpenAI string code", status: 401, contentType: "application/json",
			body: `{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}`,
			want: APIError{Status: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key"},
		},
		{
			name: "FastAPI detail", status: 422, contentType: "application/json",
			body: `{"detail":"Unprocessable"}`,
			want: APIError{Status: 422, Message: "Unprocessable"},
		},
		{
			name: "plain text", status: 403, contentType: "text/plain",
			body: "forbidden by proxy\n",
			want: APIError{Status: 403, Message: "forbidden by proxy"},
		},
		{
			name: "empty body", status: 400, contentType: "text/plain",
			want: APIError{Status: 400},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeVLLM(t)
			f.before = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
				w.Header().Set("Content-Type", tt.contentType)
				w.WriteHeader(tt.status)
				w.Write([]byte(tt.body))
				return true
			}
			c := newTestClient(t, testOptions(f.srv.URL))
			_, err := c.Complete(context.Background(), simpleRequest())
			var got *APIError
			if !errors.As(err, &got) {
				t.Fatalf("Complete = %v, want an *APIError", err)
			}
			want := tt.want
			want.Endpoint, want.Path = f.srv.URL, pathCompletions
			if *got != want {
				t.Errorf("APIError = %+v, want %+v", *got, want)
			}
			msg := err.Error()
			for _, part := range []string{"llm.Complete", f.srv.URL + pathCompletions, http.StatusText(tt.status), tt.want.Message} {
				if !strings.Contains(msg, part) {
					t.Errorf("error %q does not contain %q", msg, part)
				}
			}
			if n := f.hits.Load(); n != 1 {
				t.Errorf("server saw %d requests, want 1 (no retry on %d)", n, tt.status)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name       string
		header     string
		backoffMax time.Duration
		want       time.Duration // exact wait; 0 means "a jittered backoff"
	}{
		{"delta seconds", "2", time.Second, 2 * time.Second},
		{"zero", "0", time.Second, 0},
		{"capped at AfterMax (3s here)", "3600", time.Second, 3 * time.Second},
		{"HTTP date", now.Add(90 * time.Second).UTC().Format(http.TimeFormat), time.Minute, 90 * time.Second},
		{"garbage falls back to backoff", "soon", time.Second, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeVLLM(t)
			f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
				if hit > 1 {
					return false
				}
				w.Header().Set("Retry-After", tt.header)
				w.WriteHeader(http.StatusTooManyRequests)
				w.Write([]byte(`{"error":{"message":"slow down","type":"RateLimitError","code":429}}`))
				return true
			}
			opts := testOptions(f.srv.URL)
			opts.Retry.BackoffBase, opts.Retry.BackoffMax, opts.Retry.AfterMax = 100*time.Millisecond, tt.backoffMax, 3*tt.backoffMax
			c := newTestClient(t, opts)
			waits := recordSleeps(c)
			if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
				t.Fatalf("Complete after a 429 = %v", err)
			}
			if len(*waits) != 1 {
				t.Fatalf("waits = %v, want exactly one", *waits)
			}
			got := (*waits)[0]
			switch {
			case tt.want >= 0 && tt.name == "HTTP date":
				// An HTTP date has one-second resolution.
				if got < tt.want-2*time.Second || got > tt.want {
					t.Errorf("wait for Retry-After %q = %v, want about %v", tt.header, got, tt.want)
				}
			case tt.want >= 0:
				if got != tt.want {
					t.Errorf("wait for Retry-After %q = %v, want %v", tt.header, got, tt.want)
				}
			default:
				if got < 0 || got > opts.Retry.BackoffBase {
					t.Errorf("wait for Retry-After %q = %v, want a backoff in [0, %v]", tt.header, got, opts.Retry.BackoffBase)
				}
			}
			if s := c.Stats(); s.Retries != 1 || s.ByStatus[429] != 1 || s.ByStatus[200] != 1 {
				t.Errorf("Stats = %+v, want 1 retry, one 429 and one 200", s)
			}
		})
	}
}

func TestBackoffIsFullJitterAndCapped(t *testing.T) {
	c := newTestClient(t, Options{Endpoints: []string{"http://127.0.0.1:1"}, Retry: retry.Policy{BackoffBase: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond}, JitterSeed: 7})
	for retry := 1; retry <= 10; retry++ {
		ceil := min(10*time.Millisecond<<(retry-1), 50*time.Millisecond)
		var top time.Duration
		for i := 0; i < 200; i++ {
			d := c.backoff(retry, -1)
			if d < 0 || d > ceil {
				t.Fatalf("backoff(%d) = %v, want in [0, %v]", retry, d, ceil)
			}
			top = max(top, d)
		}
		if top < ceil/2 {
			t.Errorf("backoff(%d) never exceeded %v in 200 draws, want a spread up to %v", retry, top, ceil)
		}
	}
}

func TestRetryOn5xxThenSuccess(t *testing.T) {
	f := newFakeVLLM(t)
	f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
		switch hit {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"object":"error","message":"engine busy","type":"ServiceUnavailableError","code":503}`))
		case 2:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte("Internal Server Error"))
		default:
			return false
		}
		return true
	}
	c := newTestClient(t, testOptions(f.srv.URL))
	got, err := c.Complete(context.Background(), simpleRequest())
	if err != nil || len(got) != 1 {
		t.Fatalf("Complete after 503, 500 = %v, %v; want one completion", got, err)
	}
	s := c.Stats()
	if s.Retries != 2 || s.Attempts != 3 || s.ByStatus[503] != 1 || s.ByStatus[500] != 1 || s.Failures != 0 {
		t.Errorf("Stats = %+v, want 2 retries, 3 attempts, one 503, one 500, no failures", s)
	}
}

func TestGiveUpAfterMaxRetries(t *testing.T) {
	f := serveFixed(t, http.StatusBadGateway, []byte(`{"error":{"message":"upstream down","type":"BadGateway","code":502}}`))
	opts := testOptions(f.srv.URL)
	opts.Retry.MaxRetries = 2
	c := newTestClient(t, opts)
	_, err := c.Complete(context.Background(), simpleRequest())
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 502 {
		t.Fatalf("Complete = %v, want an *APIError with status 502", err)
	}
	if !strings.Contains(err.Error(), "gave up after 3 attempts") || !strings.Contains(err.Error(), "upstream down") {
		t.Errorf("error %q should say it gave up after 3 attempts and give the last cause", err)
	}
	if n := f.hits.Load(); n != 3 {
		t.Errorf("server saw %d requests, want 3", n)
	}
	if s := c.Stats(); s.Failures != 1 {
		t.Errorf("Stats.Failures = %d, want 1", s.Failures)
	}
}

func TestNoRetriesWhenNegative(t *testing.T) {
	f := serveFixed(t, http.StatusServiceUnavailable, nil)
	opts := testOptions(f.srv.URL)
	opts.Retry.MaxRetries = -1
	c := newTestClient(t, opts)
	if _, err := c.Complete(context.Background(), simpleRequest()); err == nil {
		t.Fatal("Complete against a 503 = nil error")
	}
	if n := f.hits.Load(); n != 1 {
		t.Errorf("server saw %d requests with MaxRetries -1, want 1", n)
	}
}

func TestHangIsRetried(t *testing.T) {
	f := newFakeVLLM(t)
	f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
		if hit == 1 {
			hangUntilDone(r)
			return true
		}
		return false
	}
	opts := testOptions(f.srv.URL)
	opts.RequestTimeout = 100 * time.Millisecond
	c := newTestClient(t, opts)
	if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
		t.Fatalf("Complete after a hang = %v", err)
	}
	s := c.Stats()
	if s.Timeouts != 1 || s.Retries != 1 || s.TransportErrors != 1 {
		t.Errorf("Stats = %+v, want 1 timeout, 1 retry, 1 transport error", s)
	}
}

func TestHangExhaustsRetriesWithClearError(t *testing.T) {
	f := newFakeVLLM(t)
	f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
		hangUntilDone(r)
		return true
	}
	opts := testOptions(f.srv.URL)
	opts.RequestTimeout = 30 * time.Millisecond
	opts.Retry.MaxRetries = 1
	opts.DownAfter = 100
	c := newTestClient(t, opts)
	_, err := c.Complete(context.Background(), simpleRequest())
	if err == nil || !strings.Contains(err.Error(), "gave up after 2 attempts") || !strings.Contains(err.Error(), "attempt timeout") {
		t.Fatalf("Complete against a hung server = %v, want a give-up error naming the attempt timeout", err)
	}
}

func TestDroppedConnectionIsRetried(t *testing.T) {
	for _, where := range []string{"before response", "mid body"} {
		t.Run(where, func(t *testing.T) {
			f := newFakeVLLM(t)
			f.before = func(w http.ResponseWriter, r *http.Request, hit int64) bool {
				if hit > 1 {
					return false
				}
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Errorf("Hijack: %v", err)
					return true
				}
				if where == "mid body" {
					buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"choices\":[")
					buf.Flush()
				}
				conn.Close()
				return true
			}
			c := newTestClient(t, testOptions(f.srv.URL))
			if _, err := c.Complete(context.Background(), simpleRequest()); err != nil {
				t.Fatalf("Complete after a dropped connection = %v", err)
			}
			if s := c.Stats(); s.TransportErrors != 1 || s.Retries != 1 {
				t.Errorf("Stats = %+v, want 1 transport error and 1 retry", s)
			}
		})
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	t.Run("during an attempt", func(t *testing.T) {
		f := newFakeVLLM(t)
		f.before = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
			hangUntilDone(r)
			return true
		}
		c := newTestClient(t, testOptions(f.srv.URL))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			for f.hits.Load() == 0 {
				time.Sleep(time.Millisecond)
			}
			cancel()
		}()
		_, err := c.Complete(ctx, simpleRequest())
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Complete with a cancelled context = %v, want context.Canceled", err)
		}
		if n := f.hits.Load(); n != 1 {
			t.Errorf("server saw %d requests, want 1", n)
		}
		if s := c.Stats(); s.Retries != 0 || s.TransportErrors != 0 {
			t.Errorf("Stats = %+v, want no retries and no transport errors for a cancellation", s)
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		f := serveFixed(t, http.StatusServiceUnavailable, nil)
		opts := testOptions(f.srv.URL)
		opts.Retry.BackoffBase, opts.Retry.BackoffMax = time.Hour, time.Hour
		c := newTestClient(t, opts)
		ctx, cancel := context.WithCancel(context.Background())
		c.sleep = func(sctx context.Context, d time.Duration) error {
			cancel() // the caller gives up while the client waits to retry
			return retry.Sleep(sctx, d)
		}
		_, err := c.Complete(ctx, simpleRequest())
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "503") {
			t.Fatalf("Complete cancelled in backoff = %v, want context.Canceled and the last cause", err)
		}
		if n := f.hits.Load(); n != 1 {
			t.Errorf("server saw %d requests, want 1", n)
		}
	})
	t.Run("waiting for a slot", func(t *testing.T) {
		f := newFakeVLLM(t)
		release := make(chan struct{})
		f.before = func(w http.ResponseWriter, r *http.Request, _ int64) bool {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return false
		}
		opts := testOptions(f.srv.URL)
		opts.MaxConcurrentPerEndpoint = 1
		c := newTestClient(t, opts)
		done := make(chan error, 1)
		go func() {
			_, err := c.Complete(context.Background(), simpleRequest())
			done <- err
		}()
		for f.hits.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Complete(ctx, simpleRequest()); !errors.Is(err, context.Canceled) {
			t.Errorf("Complete waiting for a slot with a cancelled context = %v, want context.Canceled", err)
		}
		close(release)
		if err := <-done; err != nil {
			t.Errorf("first Complete = %v", err)
		}
		if n := f.hits.Load(); n != 1 {
			t.Errorf("server saw %d requests, want 1 (the cancelled one never got a slot)", n)
		}
	})
}
