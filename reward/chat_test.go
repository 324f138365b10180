package reward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const okReply = `{"rationale":"good","score":4}`

func TestTransientFailuresAreRetried(t *testing.T) {
	tests := []struct {
		name     string
		timeout  time.Duration
		fail     func(w http.ResponseWriter, r *http.Request)
		minWait  time.Duration // the first backoff must be at least this
		minCalls int
	}{
		{"429 with Retry-After", 0, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "7")
			writeError(w, http.StatusTooManyRequests, "rate limited")
		}, 7 * time.Second, 2},
		{"429 with retry-after-ms", 0, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After-Ms", "2500")
			writeError(w, http.StatusTooManyRequests, "rate limited")
		}, 2500 * time.Millisecond, 2},
		{"500", 0, func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusInternalServerError, "boom")
		}, 0, 2},
		{"503 flat vLLM error", 0, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"object":"error","message":"overloaded","type":"ServiceUnavailable","code":503}`))
		}, 0, 2},
		{"502 html", 0, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte(`<html>bad gateway</html>`))
		}, 0, 2},
		{"200 with broken body", 0, func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"choices": [`))
		}, 0, 2},
		{"dropped connection", 0, func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}, 0, 2},
		{"hang past the timeout", 200 * time.Millisecond, func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(10 * time.Second):
			}
		}, 0, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
				if n == 0 {
					tt.fail(w, r)
					return
				}
				writeReply(w, okReply)
			})
			opts := testClientOptions(srv)
			if tt.timeout > 0 {
				opts.Timeout = tt.timeout
			}
			j, ns := newTestCA(t, opts)
			res, err := j.Judge(context.Background(), therapist())
			if err != nil || res.Score != 4 {
				t.Fatalf("Judge = %+v, %v, want score 4 after a retry", res, err)
			}
			if got := srv.Calls(); got < tt.minCalls {
				t.Errorf("calls = %d, want at least %d", got, tt.minCalls)
			}
			waits := ns.Waits()
			if len(waits) == 0 {
				t.Fatalf("no backoff recorded")
			}
			if waits[0] < tt.minWait {
				t.Errorf("first backoff = %v, want at least %v (Retry-After)", waits[0], tt.minWait)
			}
			if tt.minWait == 0 && waits[0] > opts.BackoffMax {
				t.Errorf("first backoff = %v, want at most BackoffMax %v", waits[0], opts.BackoffMax)
			}
		})
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
				writeError(w, code, "no")
			})
			j, _ := newTestCA(t, testClientOptions(srv))
			if _, err := j.Judge(context.Background(), therapist()); err == nil {
				t.Fatalf("Judge = nil error, want %d error", code)
			}
			if srv.Calls() != 1 {
				t.Errorf("calls = %d, want 1 (no retry on %d)", srv.Calls(), code)
			}
		})
	}
}

func TestPersistentFailureMarksRolloutUnjudged(t *testing.T) {
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		writeError(w, http.StatusInternalServerError, "down")
	})
	opts := testClientOptions(srv)
	opts.MaxRetries = 2
	j, ns := newTestCA(t, opts)
	rs := []dataset.Rollout{*therapist()}
	rs[0].Score = 3 // stale value must not survive
	stats := ScoreAll(context.Background(), j, rs, 2)
	if stats.Failed != 1 || stats.Judged != 0 {
		t.Errorf("ScoreAll stats = %+v, want 1 failed, 0 judged", stats)
	}
	r := rs[0]
	if r.Judged || r.Score != 0 || r.JudgeError == "" || !strings.Contains(r.JudgeError, "giving up after 3 attempts") {
		t.Errorf("rollout = judged %v score %v error %q, want unjudged, 0, a give-up error", r.Judged, r.Score, r.JudgeError)
	}
	if srv.Calls() != 3 {
		t.Errorf("calls = %d, want 3", srv.Calls())
	}
	if got := len(ns.Waits()); got != 2 {
		t.Errorf("backoffs = %d, want 2", got)
	}
}

func TestNegativeMaxRetriesMeansOneAttempt(t *testing.T) {
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		writeError(w, http.StatusInternalServerError, "down")
	})
	opts := testClientOptions(srv)
	opts.MaxRetries = -1
	j, _ := newTestCA(t, opts)
	if _, err := j.Judge(context.Background(), therapist()); err == nil {
		t.Fatal("Judge = nil error, want error")
	}
	if srv.Calls() != 1 {
		t.Errorf("calls = %d, want 1", srv.Calls())
	}
}

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	c := &ChatClient{opts: ClientOptions{BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second}}
	for attempt := 1; attempt <= 40; attempt++ {
		d := c.backoff(attempt, errors.New("x"))
		full := min(c.opts.BackoffBase<<min(attempt-1, 30), c.opts.BackoffMax)
		if d < 0 || d > full {
			t.Errorf("backoff(%d) = %v, want in [0, %v]", attempt, d, full)
		}
	}
	ra := &retryAfterError{err: errors.New("429"), wait: time.Hour}
	if d := c.backoff(1, ra); d != maxRetryAfter {
		t.Errorf("backoff(Retry-After 1h) = %v, want the cap %v", d, maxRetryAfter)
	}
}

func TestCacheResumedRunMakesNoCalls(t *testing.T) {
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		// Score by task so the two rollouts differ.
		if strings.Contains(req.Messages[1].Content, "therapist") {
			writeReply(w, `{"rationale":"therapist","score":5}`)
		} else {
			writeReply(w, `{"rationale":"hobby","score":2}`)
		}
	})
	dir := t.TempDir()
	opts := testClientOptions(srv)
	opts.CacheDir = dir

	j1, err := NewCAJudge(CAOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	first := []dataset.Rollout{*therapist(), *hobby()}
	if st := ScoreAll(context.Background(), j1, first, 2); st.Judged != 2 || st.Cached != 0 || st.PromptTokens != 200 {
		t.Fatalf("first ScoreAll = %+v, want 2 judged, 0 cached, 200 prompt tokens", st)
	}
	if err := j1.Close(); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if calls != 2 {
		t.Fatalf("calls = %d, want 2", calls)
	}

	j2, err := NewCAJudge(CAOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	second := []dataset.Rollout{*therapist(), *hobby()}
	st := ScoreAll(context.Background(), j2, second, 2)
	if st.Judged != 2 || st.Cached != 2 || st.PromptTokens != 0 {
		t.Errorf("resumed ScoreAll = %+v, want 2 judged, 2 cached, no tokens paid", st)
	}
	if srv.Calls() != calls {
		t.Errorf("resumed run made %d HTTP calls, want 0", srv.Calls()-calls)
	}
	for i := range second {
		if second[i].Score != first[i].Score || second[i].JudgeRationale != first[i].JudgeRationale {
			t.Errorf("rollout %d: cached %v %q, want %v %q", i, second[i].Score, second[i].JudgeRationale,
				first[i].Score, first[i].JudgeRationale)
		}
	}

	// Another judge model must not reuse the verdicts.
	opts.Model = "other-judge"
	j3, err := NewCAJudge(CAOptions{ClientOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer j3.Close()
	if res, err := j3.Judge(context.Background(), therapist()); err != nil || res.Cached {
		t.Errorf("other model Judge = %+v, %v, want a fresh call", res, err)
	}
	if srv.Calls() != calls+1 {
		t.Errorf("calls = %d, want %d", srv.Calls(), calls+1)
	}
}

func TestCacheToleratesTornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, CacheFile)
	good := `{"key":"k1","value":{"score":4,"rationale":"a","model":"m","prompt_tokens":1,"completion_tokens":1}}` + "\n"
	torn := `{"key":"k2","value":{"score":`
	if err := os.WriteFile(path, []byte(good+torn), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := openCache(dir)
	if err != nil {
		t.Fatalf("openCache: %v", err)
	}
	if _, ok := c.get("k1"); !ok || c.len() != 1 || c.skipped != 1 {
		t.Errorf("loaded %d entries (skipped %d), want k1 only and 1 skipped", c.len(), c.skipped)
	}
	if err := c.put("k3", []byte(`{"score":2}`)); err != nil {
		t.Fatal(err)
	}
	c.close()
	c2, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	if _, ok := c2.get("k3"); !ok || c2.len() != 2 {
		t.Errorf("after reopen: %d entries, k3 present %v; want k1 and k3", c2.len(), ok)
	}
}

func TestCacheConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.put(fmt.Sprintf("k%d", i), []byte(fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat("x", 5000))))
		}()
	}
	wg.Wait()
	c.close()
	c2, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.close()
	if c2.len() != 50 || c2.skipped != 0 {
		t.Errorf("reloaded %d entries, %d skipped; want 50, 0", c2.len(), c2.skipped)
	}
}

func TestSecretNeverLeaks(t *testing.T) {
	const secret = "sk-parley-SECRET-7f3a9c1e5d"
	// The server echoes the Authorization header in its error bodies, the
	// worst case for an error message that quotes the body.
	var hobbyCalls atomic.Int32
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		switch {
		case strings.Contains(req.Messages[1].Content, "hobby"):
			if hobbyCalls.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, "upstream failed for %s", r.Header.Get("Authorization"))
				return
			}
			writeError(w, http.StatusUnauthorized, "bad key "+r.Header.Get("Authorization"))
		default:
			writeReply(w, okReply)
		}
	})
	var logs bytes.Buffer
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(&logs), zap.DebugLevel)
	dir := t.TempDir()
	opts := testClientOptions(srv)
	opts.APIKey = secret
	opts.CacheDir = dir
	opts.Logger = zap.New(core)
	j, _ := newTestCA(t, opts)
	rs := []dataset.Rollout{*therapist(), *hobby()}
	st := ScoreAll(context.Background(), j, rs, 2)
	j.Close()
	if st.Judged != 1 || st.Failed != 1 {
		t.Fatalf("ScoreAll = %+v, want 1 judged and 1 failed", st)
	}
	if !strings.Contains(srv.headers[0].Get("Authorization"), secret) {
		t.Fatalf("the key was not sent")
	}
	if logs.Len() == 0 {
		t.Fatalf("no logs captured; the retry path was not exercised")
	}
	check := func(where, s string) {
		if strings.Contains(s, secret) {
			t.Errorf("the API key appears in %s", where)
		}
	}
	check("logs", logs.String())
	for _, r := range rs {
		check("rollout "+r.RolloutID, fmt.Sprintf("%+v", r))
	}
	if !strings.Contains(rs[1].JudgeError, "[REDACTED]") {
		t.Errorf("JudgeError = %q, want the echoed key redacted", rs[1].JudgeError)
	}
	check("options", fmt.Sprint(opts)+fmt.Sprintf("%+v", opts))
	files := 0
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		check(path, string(b))
		return nil
	})
	if files == 0 {
		t.Errorf("no cache file written")
	}
}

func TestConcurrencyIsBounded(t *testing.T) {
	var inFlight, peak atomic.Int32
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		inFlight.Add(-1)
		writeReply(w, okReply)
	})
	opts := testClientOptions(srv)
	opts.Concurrency = 2
	j, _ := newTestCA(t, opts)
	rs := make([]dataset.Rollout, 12)
	for i := range rs {
		rs[i] = *therapist()
		rs[i].Final = fmt.Sprintf("solution %d", i)
	}
	st := ScoreAll(context.Background(), j, rs, 12)
	if st.Judged != 12 {
		t.Fatalf("ScoreAll = %+v, want 12 judged", st)
	}
	if p := peak.Load(); p > 2 {
		t.Errorf("peak requests in flight = %d, want at most 2", p)
	}
}

func TestTokenLimitAllowsOversizedRequest(t *testing.T) {
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) {
		writeReply(w, okReply)
	})
	opts := testClientOptions(srv)
	opts.TokensPerMinute = 60 // burst 6 tokens, far below one request's estimate
	opts.RequestsPerMinute = 60
	j, _ := newTestCA(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := j.Judge(ctx, therapist()); err != nil {
		t.Fatalf("Judge under a small token limit: %v", err)
	}
}

func TestSetTemperature(t *testing.T) {
	got, err := setTemperature([]byte(`{"model":"m","messages":[{"role":"user","content":"<hi>"}]}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(got, []byte(`"temperature":0`)) || !bytes.Contains(got, []byte(`"model":"m"`)) {
		t.Errorf("setTemperature = %s, want temperature 0 and the original fields", got)
	}
	if _, err := setTemperature([]byte(`[1]`), 0); err == nil {
		t.Errorf("setTemperature(array) = nil error, want error")
	}
}

func TestRedact(t *testing.T) {
	c := &ChatClient{opts: ClientOptions{APIKey: "k3y-123"}}
	long := errors.New("Bearer k3y-123 " + strings.Repeat("é", 2000))
	got := c.redact(long)
	if strings.Contains(got.Error(), "k3y-123") || !strings.Contains(got.Error(), "[REDACTED]") {
		t.Errorf("redact(%.30q) = %.40q, want the key replaced", long.Error(), got.Error())
	}
	if len(got.Error()) > maxErrorLen+len("…") || !errors.Is(got, long) {
		t.Errorf("redact: %d bytes, unwraps to original %v; want at most %d and true", len(got.Error()), errors.Is(got, long), maxErrorLen)
	}
	short := errors.New("plain")
	if c.redact(short) != short {
		t.Errorf("redact(plain) changed the error")
	}
}
