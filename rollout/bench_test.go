package rollout_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
)

// TestMain doubles as serve-sim in a child process for the benchmarks, so
// that parley's CPU and the simulator's are measured apart.
func TestMain(m *testing.M) {
	if addr := os.Getenv("PARLEY_BENCH_SIM_ADDR"); addr != "" {
		median, _ := time.ParseDuration(os.Getenv("PARLEY_BENCH_SIM_LATENCY"))
		srv, err := sim.New(sim.Options{LatencyMedian: median, LatencySigma: 0.6, TailProb: 0.01, TailMult: 8})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("listening", ln.Addr())
		ctx, cancel := context.WithCancel(context.Background())
		go func() { // exit when the parent closes our stdin
			_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
			cancel()
		}()
		_ = srv.Serve(ctx, ln)
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		fmt.Printf("cpu %d\n", ru.Utime.Nano()+ru.Stime.Nano())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// simChild starts the simulator in a child process and returns its URL and
// a stop function that reports the child's CPU time.
func simChild(b *testing.B, latency time.Duration) (string, func() time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PARLEY_BENCH_SIM_ADDR=127.0.0.1:0", "PARLEY_BENCH_SIM_LATENCY="+latency.String())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	rd := bufio.NewReader(stdout)
	line, err := rd.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening ") {
		b.Fatalf("sim child: %q %v", line, err)
	}
	url := "http://" + strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return url, func() time.Duration {
		stdin.Close()
		var cpu time.Duration
		for {
			l, err := rd.ReadString('\n')
			if strings.HasPrefix(l, "cpu ") {
				n, _ := strconv.ParseInt(strings.TrimSpace(l[4:]), 10, 64)
				cpu = time.Duration(n)
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		return cpu
	}
}

func cpuNow() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRollouts runs prompts×group deliberation rollouts against the
// simulator in a child process and reports rollouts per second, parley's
// CPU per turn request (tokenize and completion each count), the
// simulator's, and parley's peak RSS.
func benchRollouts(b *testing.B, prompts, group, concurrency int, latency time.Duration) {
	ps := samplePrompts(b, prompts)
	url, stop := simChild(b, latency)
	client, err := llm.New(llm.Options{Endpoints: []string{url}, MaxConcurrentPerEndpoint: concurrency * 2, RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:   deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: 96, FinalTokens: 128}),
		Policy: client, Model: sim.DefaultModel,
		Sampling:  llm.Sampling{MaxTokens: 96, Temperature: 1, TopP: 1},
		GroupSize: group, Concurrency: concurrency, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var rollouts, requests int64
	var elapsed time.Duration
	cpu0 := cpuNow()
	for i := 0; i < b.N; i++ {
		sum, err := r.Run(context.Background(), ps, func(*dataset.Rollout) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if sum.Failed > 0 {
			b.Fatalf("%d rollouts failed", sum.Failed)
		}
		rollouts += int64(sum.Rollouts)
		requests += sum.Requests
		elapsed += sum.Elapsed
	}
	cpu := cpuNow() - cpu0
	b.StopTimer()
	simCPU := stop()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	b.ReportMetric(float64(rollouts)/elapsed.Seconds(), "rollouts/s")
	b.ReportMetric(float64(requests)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/float64(requests), "parley-cpu-µs/req")
	b.ReportMetric(float64(simCPU.Microseconds())/float64(requests), "sim-cpu-µs/req")
	b.ReportMetric(float64(ru.Maxrss)/1024, "peak-rss-MB")
}

func BenchmarkRolloutsZeroLatency(b *testing.B) { benchRollouts(b, 64, 8, 256, 0) }

// BenchmarkRollouts1024Concurrent keeps 1,024 dialogues in flight against a
// simulator with a realistic, heavy-tailed latency (median 300ms).
func BenchmarkRollouts1024Concurrent(b *testing.B) {
	if testing.Short() {
		b.Skip("short")
	}
	benchRollouts(b, 128, 8, 1024, 300*time.Millisecond)
}
