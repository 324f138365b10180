package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWriteBatch writes one step's batch of 4,096 sequences of 2,048
// tokens (8.4M tokens) per iteration: zstd parquet, fsync, rename, marker.
func BenchmarkWriteBatch(b *testing.B) {
	if testing.Short() {
		b.Skip("large benchmark skipped under -short")
	}
	const seqs, seqLen = 4096, 2048
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]BatchRow, seqs)
	for i := range rows {
		r := BatchRow{
			RunID: "bench", SampleID: fmt.Sprintf("s%d", i), GroupID: fmt.Sprintf("g%d", i/16),
			RolloutID: fmt.Sprintf("r%d", i/2), PromptID: fmt.Sprintf("p%d", i/16), Step: 1,
			Env: "deliberation", Role: []string{"A", "B"}[i%2], Reward: rng.Float32(), Temperature: 1,
			InputIDs: make([]int32, seqLen), LossMask: make([]int8, seqLen),
			InferenceLogprobs: make([]float32, seqLen), Advantages: make([]float32, seqLen),
		}
		adv := rng.Float32()*2 - 1
		for k := 0; k < seqLen; k++ {
			r.InputIDs[k] = int32(rng.IntN(151_000))
			// Alternate prompt-like (mask 0) and sampled (mask 1) spans.
			if (k/256)%2 == 1 {
				r.LossMask[k] = 1
				r.InferenceLogprobs[k] = -rng.Float32() * 3
				r.Advantages[k] = adv
			}
		}
		rows[i] = r
	}
	dir := b.TempDir()
	var fileBytes int64
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for b.Loop() {
		if _, err := WriteBatch(batchPath(dir, 1), 1, 0, rows); err != nil {
			b.Fatal(err)
		}
		st, err := os.Stat(batchPath(dir, 1))
		if err != nil {
			b.Fatal(err)
		}
		fileBytes = st.Size()
	}
	sec := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric((cpuSeconds()-cpu0)/float64(b.N), "cpu-s/op")
	tokens := float64(seqs * seqLen)
	b.ReportMetric(tokens/sec, "tokens/s")
	b.ReportMetric(tokens*13/1e6/sec, "raw-MB/s") // 4+1+4+4 bytes a token
	b.ReportMetric(float64(fileBytes)/1e6/sec, "file-MB/s")
	b.ReportMetric(float64(fileBytes)/1e6, "file-MB")

	// pyarrow writing the same table (read from our file, so the data is
	// identical), zstd, same row groups, timed inside Python: the ratio is
	// parley's write time over pyarrow's.
	py := os.Getenv("PARLEY_PYTHON")
	if py == "" {
		b.Log("PARLEY_PYTHON unset: no pyarrow comparison")
		return
	}
	script := `
import sys, time, pyarrow.parquet as pq
t = pq.read_table(sys.argv[1])
best = None
for _ in range(int(sys.argv[3])):
    t0 = time.perf_counter()
    pq.write_table(t, sys.argv[2], compression="zstd", row_group_size=512)
    with open(sys.argv[2], "rb+") as f:
        import os; os.fsync(f.fileno())
    d = time.perf_counter() - t0
    best = d if best is None or d < best else best
print(best)
`
	out, err := exec.Command(py, "-c", script, batchPath(dir, 1), filepath.Join(dir, "pyarrow.parquet"), fmt.Sprint(max(b.N, 1))).Output()
	if err != nil {
		b.Fatalf("pyarrow: %v", err)
	}
	pySec, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		b.Fatalf("pyarrow output %q: %v", out, err)
	}
	b.ReportMetric(tokens/pySec, "pyarrow-tokens/s")
	b.ReportMetric(sec/pySec, "time-vs-pyarrow")
}

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
		w, err := NewRolloutWriter(RunDir(run).RolloutsPath(f), RolloutWriterOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < perFile; i++ {
			r := testRollout(f, i)
			r.Task = text(200)
			r.Final = text(800)
			r.Turns = make([]Turn, 4)
			for k := range r.Turns {
				r.Turns[k] = Turn{Agent: []string{"A", "B"}[k%2], Text: text(600), Tokens: 150, FinishReason: "stop"}
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
	paths, _ := filepath.Glob(filepath.Join(RunDir(run).RolloutsDir(), "*.parquet"))
	for _, p := range paths {
		st, _ := os.Stat(p)
		inBytes += st.Size()
	}
	b.Logf("setup: %d rollouts in %d files, %.1f MB, written in %v", files*perFile, files, float64(inBytes)/1e6, time.Since(setup).Round(time.Millisecond))

	for _, format := range []string{FormatJSONL, FormatHF} {
		b.Run(format, func(b *testing.B) {
			var peak atomic.Uint64
			var written int64
			cpu0 := cpuSeconds()
			resetPeakRSS()
			for b.Loop() {
				runtime.GC()
				done := make(chan struct{})
				go sampleHeap(&peak, done)
				stats, err := Export(context.Background(), ExportOptions{From: run, Format: format, Out: filepath.Join(b.TempDir(), "out")})
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
