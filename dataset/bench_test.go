package dataset

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// cpuSeconds returns the user and system CPU time of the process so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
