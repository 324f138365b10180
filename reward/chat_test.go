package reward

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
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
			chattest.WriteError(w, http.StatusTooManyRequests, "rate limited")
		}, 7 * time.Second, 2},
		{"429 with retry-after-ms", 0, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After-Ms", "2500")
			chattest.WriteError(w, http.StatusTooManyRequests, "rate limited")
		}, 2500 * time.Millisecond, 2},
		{"500", 0, func(w http.ResponseWriter, r *http.Request) {
			chattest.WriteError(w, http.StatusInternalServerError, "boom")
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
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				if n == 0 {
					tt.fail(w, r)
					return
				}
				chattest.WriteReply(w, okReply)
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
			if tt.minWait == 0 && waits[0] > opts.Retry.BackoffMax {
				t.Errorf("first backoff = %v, want at most BackoffMax %v", waits[0], opts.Retry.BackoffMax)
			}
		})
	}
}

func TestPermanentErrorsAreNotRetried(t *testing.T) {
	for _, code := range []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				chattest.WriteError(w, code, "no")
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
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteError(w, http.StatusInternalServerError, "down")
	})
	opts := testClientOptions(srv)
	opts.Retry.MaxRetries = 2
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

// TestMaxRetries checks the attempts a retry policy makes: a config's
// max_retries 0 (retry.Count: judge.max_retries: 0 once made 6 attempts)
// and a negative MaxRetries make one, 2 makes three.
func TestMaxRetries(t *testing.T) {
	for _, n := range []int{retry.Count(retry.Default, 0).MaxRetries, -1, 2} {
		srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
			chattest.WriteError(w, http.StatusInternalServerError, "down")
		})
		opts := testClientOptions(srv)
		opts.Retry.MaxRetries = n
		j, _ := newTestCA(t, opts)
		if _, err := j.Judge(context.Background(), therapist()); err == nil {
			t.Fatal("Judge = nil error, want error")
		}
		if want := 1 + max(n, 0); srv.Calls() != want {
			t.Errorf("max_retries %d: calls = %d, want %d", n, srv.Calls(), want)
		}
	}
}

func TestCacheResumedRunMakesNoCalls(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		// Score by task so the two rollouts differ.
		if strings.Contains(req.Messages[1].Content, "therapist") {
			chattest.WriteReply(w, `{"rationale":"therapist","score":5}`)
		} else {
			chattest.WriteReply(w, `{"rationale":"hobby","score":2}`)
		}
	})
	dir := t.TempDir()
	opts := testClientOptions(srv)
	opts.CacheDir = dir

	c1, err := chat.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	j1 := NewCAJudge(c1)
	first := []dataset.Rollout{*therapist(), *hobby()}
	if st := ScoreAll(context.Background(), j1, first, 2); st.Judged != 2 || st.Cached != 0 || st.PromptTokens != 200 {
		t.Fatalf("first ScoreAll = %+v, want 2 judged, 0 cached, 200 prompt tokens", st)
	}
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	calls := srv.Calls()
	if calls != 2 {
		t.Fatalf("calls = %d, want 2", calls)
	}

	c2, err := chat.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	j2 := NewCAJudge(c2)
	defer c2.Close()
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
	c3, err := chat.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	j3 := NewCAJudge(c3)
	defer c3.Close()
	if res, err := j3.Judge(context.Background(), therapist()); err != nil || res.Cached {
		t.Errorf("other model Judge = %+v, %v, want a fresh call", res, err)
	}
	if srv.Calls() != calls+1 {
		t.Errorf("calls = %d, want %d", srv.Calls(), calls+1)
	}
}

func TestSecretNeverLeaks(t *testing.T) {
	const secret = "sk-parley-SECRET-7f3a9c1e5d"
	// The server echoes the Authorization header in its error bodies, the
	// worst case for an error message that quotes the body.
	var hobbyCalls atomic.Int32
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		switch {
		case strings.Contains(req.Messages[1].Content, "hobby"):
			if hobbyCalls.Add(1) == 1 {
				w.WriteHeader(http.StatusInternalServerError)
				fmt.Fprintf(w, "upstream failed for %s", r.Header.Get("Authorization"))
				return
			}
			chattest.WriteError(w, http.StatusUnauthorized, "bad key "+r.Header.Get("Authorization"))
		default:
			chattest.WriteReply(w, okReply)
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
	if st.Judged != 1 || st.Failed != 1 {
		t.Fatalf("ScoreAll = %+v, want 1 judged and 1 failed", st)
	}
	if !strings.Contains(srv.Header(0).Get("Authorization"), secret) {
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
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		cur := inFlight.Add(1)
		for {
			p := peak.Load()
			if cur <= p || peak.CompareAndSwap(p, cur) {
				break
			}
		}
		time.Sleep(5 * time.Millisecond)
		inFlight.Add(-1)
		chattest.WriteReply(w, okReply)
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
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, okReply)
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
