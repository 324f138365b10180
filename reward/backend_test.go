package reward

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/sim"
)

// TestResultRecordsBackend: every CA verdict records the model and system
// fingerprint serve-sim reported over HTTP; a verdict from the cache keeps
// those of the reply that was paid for, and the client counts it as a
// cache hit, not a call.
func TestResultRecordsBackend(t *testing.T) {
	s, err := sim.New(sim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	c, err := chat.New(chat.Options{BaseURL: srv.URL + "/v1", Model: "gpt-judge", CacheDir: t.TempDir(),
		Retry: retry.Policy{BackoffBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	j := NewCAJudge(c)
	if j.ChatClient() != c {
		t.Fatal("ChatClient is not the judge's client")
	}
	other := therapist()
	other.RolloutID, other.Final = "other", "Tell the police."
	steps := []struct {
		name, final string
		setFP       string // set on the judge before the step ("": unchanged)
		wantFP      string
		wantCached  bool
	}{
		{"first", therapist().Final, "", sim.DefaultFingerprint, false},
		{"after the backend changed", "Tell the police.", "fp_sim1", "fp_sim1", false},
		{"cached from before the change", therapist().Final, "", sim.DefaultFingerprint, true},
	}
	for _, st := range steps {
		if st.setFP != "" {
			s.SetFingerprint(st.setFP)
		}
		r := therapist()
		r.Final = st.final
		res, err := j.Judge(context.Background(), r)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if res.ReportedModel != "gpt-judge" || res.SystemFingerprint != st.wantFP || res.Cached != st.wantCached {
			t.Errorf("%s: reported %q %q cached %v, want %q %q cached %v", st.name, res.ReportedModel, res.SystemFingerprint, res.Cached,
				"gpt-judge", st.wantFP, st.wantCached)
		}
	}
	got := c.Stats()
	if got.Requests != 2 || got.CacheHits != 1 || got.Attempts != 2 || s.Stats().Requests[sim.PathChat] != 2 {
		t.Errorf("Stats = %+v (the judge served %d), want 2 requests, 2 attempts, 1 cache hit", got, s.Stats().Requests[sim.PathChat])
	}
	want := map[chat.Backend]int64{{Model: "gpt-judge", Fingerprint: sim.DefaultFingerprint}: 1, {Model: "gpt-judge", Fingerprint: "fp_sim1"}: 1}
	if len(got.Backends) != len(want) {
		t.Errorf("Backends = %v, want %v", got.Backends, want)
	}
	for b, n := range want {
		if got.Backends[b] != n {
			t.Errorf("Backends[%v] = %d, want %d", b, got.Backends[b], n)
		}
	}
}
