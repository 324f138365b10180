package export

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

// BenchmarkExport exports 100,000 synthetic rollouts (20 step files of
// 5,000, each with four dialogue turns, a final completion and two
// 256-token sequences) to JSONL and to an HF folder, and samples the heap
// during the export to show that memory stays flat.
func BenchmarkExport(b *testing.B) {
	if testing.Short() {
		b.Skip("large benchmark skipped under -short")
	}
	const files, perFile = 20, 5000
	run := b.TempDir()
	words := strings.Fields("we should balance the needs of everyone involved while protecting trust and " +
		"honesty so that the plan respects both of our values and leaves room for agreement on a fair " +
		"outcome that expands the agency of all stakeholders in this difficult situation today")
	rng := rand.New(rand.NewPCG(3, 4))
	text := func(n int) string {
		var sb strings.Builder
		for sb.Len() < n {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()
	}
	setup := time.Now()
	for f := 1; f <= files; f++ {
		w, err := dataset.NewRolloutWriter(dataset.RunDir(run).RolloutsPath(f), dataset.RolloutWriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < perFile; i++ {
			r := testRollout(f, i)
			r.Task = text(200)
			r.Final = text(800)
			r.Turns = make([]dataset.Turn, 4)
			for k := range r.Turns {
				r.Turns[k] = dataset.Turn{Agent: []string{"A", "B"}[k%2], Text: text(600), Tokens: 150, FinishReason: "stop"}
			}
			for s := range r.Sequences[:2] {
				seq := &r.Sequences[s]
				seq.InputIDs, seq.LossMask, seq.Logprobs = make([]int32, 256), make([]int8, 256), make([]float32, 256)
				for k := range seq.InputIDs {
					seq.InputIDs[k] = int32(rng.IntN(151_000))
					if k >= 64 {
						seq.LossMask[k], seq.Logprobs[k] = 1, -rng.Float32()
					}
				}
			}
			if err := w.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			b.Fatal(err)
		}
	}
	var inBytes int64
	paths, _ := filepath.Glob(filepath.Join(dataset.RunDir(run).RolloutsDir(), "*.parquet"))
	for _, p := range paths {
		st, _ := os.Stat(p)
		inBytes += st.Size()
	}
	b.Logf("setup: %d rollouts in %d files, %.1f MB, written in %v", files*perFile, files, float64(inBytes)/1e6, time.Since(setup).Round(time.Millisecond))

	for _, format := range FormatNames() {
		b.Run(format, func(b *testing.B) {
			var peak atomic.Uint64
			var written int64
			cpu0 := cpuSeconds()
			resetPeakRSS()
			for b.Loop() {
				runtime.GC()
				done := make(chan struct{})
				go sampleHeap(&peak, done)
				stats, err := Rollouts(context.Background(), Options{From: run, Format: format, Out: filepath.Join(b.TempDir(), "out")})
				close(done)
				if err != nil {
					b.Fatal(err)
				}
				written = stats.Written
			}
			b.ReportMetric(float64(written)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peak.Load())/1e6, "peak-heap-MB")
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			b.ReportMetric(float64(ms.Sys)/1e6, "sys-MB")
			if rss := peakRSS(); rss > 0 {
				b.ReportMetric(float64(rss)/1e6, "peak-rss-MB")
			}
		})
	}
}

// resetPeakRSS resets the kernel's peak-RSS mark of this process (Linux:
// writing 5 to /proc/self/clear_refs), so that peakRSS measures what
// follows rather than the benchmark's setup.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS reads the process's peak resident set (VmHWM) in bytes, or 0.
func peakRSS() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// cpuSeconds returns the user and system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// sampleHeap records the peak HeapInuse every 5 ms until done is closed.
func sampleHeap(peak *atomic.Uint64, done chan struct{}) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	var ms runtime.MemStats
	for {
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse > peak.Load() {
			peak.Store(ms.HeapInuse)
		}
		select {
		case <-done:
			return
		case <-t.C:
		}
	}
}
