package telemetry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/llm"
	"go.uber.org/zap"
)

func TestMetricName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"reward_mean", "reward_mean"},
		{"trainer/loss", "trainer_loss"},
		{"reward_mean/holder", "reward_mean_holder"},
		{"a.b-c", "a_b_c"},
	}
	for _, tt := range tests {
		if got := MetricName(tt.in); got != tt.want {
			t.Errorf("MetricName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestServeExposesARun scrapes /metrics over HTTP after a step, two
// judge calls and rollouts in flight, and reads the values back.
func TestServeExposesARun(t *testing.T) {
	m := New(func() llm.Stats { return llm.Stats{Requests: 12, Retries: 2, Failures: 1} })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, err := m.Serve(ctx, "127.0.0.1:0", zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	m.Active(1)
	m.Active(1)
	m.Active(-1)
	m.ObserveJudge(200*time.Millisecond, nil)
	m.ObserveJudge(time.Second, errors.New("judge down"))
	m.Step(map[string]any{"step": 3, "rollouts": 32, "rollouts_failed": 2, "reward_mean": 0.25, "trainer/loss": 1.5, "note": "text"})
	m.Step(map[string]any{"step": 4, "rollouts": 32, "rollouts_failed": 0, "reward_mean": 0.5})

	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	for _, want := range []string{
		"parley_steps_total 2",
		"parley_step 4",
		"parley_rollouts_in_flight 1",
		`parley_rollouts_total{outcome="ok"} 62`,
		`parley_rollouts_total{outcome="failed"} 2`,
		"parley_judge_request_duration_seconds_count 2",
		"parley_judge_failures_total 1",
		"parley_last_step_reward_mean 0.5",
		"parley_last_step_trainer_loss 1.5",
		"parley_policy_requests_total 12",
		"parley_policy_retries_total 2",
		"parley_policy_failures_total 1",
		"process_resident_memory_bytes",
	} {
		if !strings.Contains(body, want+"\n") && !strings.Contains(body, want+" ") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "parley_last_step_note") {
		t.Error("a text metric became a gauge")
	}
}

func TestNilMetricsIgnoreCalls(t *testing.T) {
	var m *Metrics
	m.Active(1)
	m.ObserveJudge(time.Second, nil)
	m.Step(map[string]any{"step": 1})
}

func TestServeBadAddrNamesKey(t *testing.T) {
	_, err := New(nil).Serve(context.Background(), "not-an-addr", zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "train.metrics_addr") {
		t.Errorf("Serve(bad) = %v, want an error naming train.metrics_addr", err)
	}
}
