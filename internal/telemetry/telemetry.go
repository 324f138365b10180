// Package telemetry serves a training run's live state to Prometheus:
// steps done, rollouts in flight and finished, judge latency and failures,
// the policy client's requests and retries, and every numeric metric of
// the last finished step. parley train serves it on train.metrics_addr.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/llm"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// Metrics is the registry of one run's metrics. Its methods are safe for
// concurrent use; a nil *Metrics ignores every call, so callers need not
// check whether metrics are on.
type Metrics struct {
	reg           *prometheus.Registry
	steps         prometheus.Counter
	step          prometheus.Gauge
	inFlight      prometheus.Gauge
	rollouts      *prometheus.CounterVec
	judgeSeconds  prometheus.Histogram
	judgeFailures prometheus.Counter

	mu   sync.Mutex
	last map[string]prometheus.Gauge // parley_last_step_<metric>
}

// New returns the registry; policy, if not nil, is read at each scrape for
// the policy client's counters.
func New(policy func() llm.Stats) *Metrics {
	m := &Metrics{
		reg:   prometheus.NewRegistry(),
		steps: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_steps_total", Help: "Training steps finished by this process."}),
		step:  prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_step", Help: "The last step whose batch was written."}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_rollouts_in_flight",
			Help: "Rollouts being played now."}),
		rollouts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_rollouts_total",
			Help: "Rollouts finished, by outcome (ok, failed)."}, []string{"outcome"}),
		judgeSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "parley_judge_request_duration_seconds",
			Help:    "Time of each judge request, retries included.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12)}),
		judgeFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_judge_failures_total",
			Help: "Judge requests that failed after their retries."}),
		last: map[string]prometheus.Gauge{},
	}
	m.reg.MustRegister(m.steps, m.step, m.inFlight, m.rollouts, m.judgeSeconds, m.judgeFailures,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if policy != nil {
		counter := func(name, help string, v func(llm.Stats) int64) prometheus.Collector {
			return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help},
				func() float64 { return float64(v(policy())) })
		}
		m.reg.MustRegister(
			counter("parley_policy_requests_total", "Calls to the policy server.", func(s llm.Stats) int64 { return s.Requests }),
			counter("parley_policy_retries_total", "Policy attempts made after a retryable failure.", func(s llm.Stats) int64 { return s.Retries }),
			counter("parley_policy_failures_total", "Policy calls that failed after their retries.", func(s llm.Stats) int64 { return s.Failures }),
		)
	}
	return m
}

// Active adds delta to the rollouts in flight (rollout.RunnerOptions.OnActive).
func (m *Metrics) Active(delta int) {
	if m != nil {
		m.inFlight.Add(float64(delta))
	}
}

// ObserveJudge records one judge request (chat.Options.Observe).
func (m *Metrics) ObserveJudge(elapsed time.Duration, err error) {
	if m == nil {
		return
	}
	m.judgeSeconds.Observe(elapsed.Seconds())
	if err != nil {
		m.judgeFailures.Inc()
	}
}

// Step records a finished step from its metrics (the sidecar's map):
// the step counters, the rollouts by outcome, and one gauge per numeric
// metric, named parley_last_step_<name> (trainer/loss becomes
// parley_last_step_trainer_loss).
func (m *Metrics) Step(metrics map[string]any) {
	if m == nil {
		return
	}
	m.steps.Inc()
	if s, ok := number(metrics["step"]); ok {
		m.step.Set(s)
	}
	n, _ := number(metrics["rollouts"])
	failed, _ := number(metrics["rollouts_failed"])
	m.rollouts.WithLabelValues("ok").Add(max(n-failed, 0))
	m.rollouts.WithLabelValues("failed").Add(failed)
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range metrics {
		x, ok := number(v)
		if !ok || k == "step" {
			continue
		}
		g := m.last[k]
		if g == nil {
			g = prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_last_step_" + MetricName(k),
				Help: "The last finished step's " + k + " (metrics.jsonl)."})
			if err := m.reg.Register(g); err != nil {
				continue // two keys that sanitize to one name: keep the first
			}
			m.last[k] = g
		}
		g.Set(x)
	}
}

var nonName = regexp.MustCompile(`[^a-zA-Z0-9_]+`)

// MetricName turns a step metric key into a Prometheus name fragment.
func MetricName(key string) string {
	return strings.Trim(nonName.ReplaceAllString(key, "_"), "_")
}

// number returns v as a float64 when it is a JSON or Go number.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Serve listens on addr (host:port; port 0 picks one) and serves /metrics
// until ctx ends; it returns the URL once listening.
func (m *Metrics) Serve(ctx context.Context, addr string, log *zap.Logger) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("telemetry: listen on train.metrics_addr %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Warn("metrics server stopped", zap.Error(err))
		}
	}()
	return "http://" + ln.Addr().String() + "/metrics", nil
}
