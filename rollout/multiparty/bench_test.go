package multiparty_test

import (
	"context"
	"io/fs"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/sim"
)

// BenchmarkSeries100 plays one series of 100 games (2HB+2G, S+P) against
// an in-process serve-sim over HTTP, per assessment method: BRS (no model
// call after a game) and free-form (one assessment turn per party per
// game). Reported per series: ns/op and B/op (Go's), peak-heap-MB (the
// largest live heap sampled every 10ms, serve-sim included: one process),
// disk-MB (the series' game records) and games/s.
//
//	go test ./rollout/multiparty -run '^$' -bench Series100 -benchtime 1x
func BenchmarkSeries100(b *testing.B) {
	for _, cond := range []string{"brs/s_p", "freeform/s_p"} {
		b.Run(cond, func(b *testing.B) {
			cfg := multiparty.DefaultConfig()
			cfg.Conditions, cfg.SeriesLength = []string{cond}, 100
			plan, err := multiparty.Plan(*cfg, fixedSet(b, scenario.Type2HB2G), 1, 3)
			if err != nil {
				b.Fatal(err)
			}
			s, _ := sim.New(sim.Options{Games: []sim.Answerer{multiparty.Sim{}}})
			defer s.Close()
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			client, _ := llm.New(llm.Options{Endpoints: []string{srv.URL}})
			defer client.Close()
			opts := rollout.RunnerOptions{Game: multiparty.New(*cfg, 256), Policy: client, Model: sim.DefaultModel, Concurrency: 1, Seed: 1,
				Sampling: llm.Sampling{MaxTokens: 256, Temperature: 1, TopP: 1}}
			peak := samplePeakHeap()
			b.ReportAllocs()
			b.ResetTimer()
			var disk int64
			start := time.Now()
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				sum, err := rollout.RunSeries(context.Background(), opts, dir, plan)
				if err != nil || sum.Played != 100 || sum.Failed != 0 {
					b.Fatalf("RunSeries = %+v, %v", sum, err)
				}
				disk = dirSize(dir)
			}
			b.StopTimer()
			b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MB")
			b.ReportMetric(float64(disk)/(1<<20), "disk-MB")
			b.ReportMetric(float64(100*b.N)/time.Since(start).Seconds(), "games/s")
		})
	}
}

// samplePeakHeap samples the live heap every 10ms until the returned
// function is called, which returns the largest sample.
func samplePeakHeap() func() uint64 {
	var mu sync.Mutex
	var peak uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			mu.Lock()
			peak = max(peak, ms.HeapInuse)
			mu.Unlock()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
