package rollout_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
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
		os.Exit(serveSimChild(addr))
	}
	os.Exit(m.Run())
}

// simConfig is the simulator a benchmark plays against.
type simConfig struct {
	// latency is the median of the lognormal latency (sigma 0.6, a 1 %
	// tail ×8); zero answers at once.
	latency time.Duration
	// template is sim.TemplateChatML (the default) or sim.TemplateQwen3.
	template string
	// agreeProb is sim.Options.AgreeProb: 0 the default, negative never
	// (every dialogue plays all its rounds).
	agreeProb float64
}

// qwen3FullRounds is serve-sim with Qwen3's template whose agents never
// agree: every deliberation plays its 5 rounds.
var qwen3FullRounds = simConfig{template: sim.TemplateQwen3, agreeProb: -1}

func (c simConfig) env() []string {
	return []string{"PARLEY_BENCH_SIM_ADDR=127.0.0.1:0", "PARLEY_BENCH_SIM_LATENCY=" + c.latency.String(),
		"PARLEY_BENCH_SIM_TEMPLATE=" + c.template, "PARLEY_BENCH_SIM_AGREE=" + strconv.FormatFloat(c.agreeProb, 'g', -1, 64)}
}

// serveSimChild serves the simulator that simChild's environment describes
// until stdin closes, then prints its own CPU time.
func serveSimChild(addr string) int {
	median, _ := time.ParseDuration(os.Getenv("PARLEY_BENCH_SIM_LATENCY"))
	agree, _ := strconv.ParseFloat(os.Getenv("PARLEY_BENCH_SIM_AGREE"), 64)
	srv, err := sim.New(sim.Options{LatencyMedian: median, LatencySigma: 0.6, TailProb: 0.01, TailMult: 8,
		Template: os.Getenv("PARLEY_BENCH_SIM_TEMPLATE"), AgreeProb: agree})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("listening", ln.Addr())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // exit when the parent closes our stdin
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		cancel()
	}()
	_ = srv.Serve(ctx, ln)
	fmt.Printf("cpu %d\n", cpuNow().Nanoseconds())
	return 0
}

// simChild starts the simulator in a child process and returns its URL and
// a stop function that reports the child's CPU time.
func simChild(b *testing.B, cfg simConfig) (string, func() time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), cfg.env()...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
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

// resetPeakRSS returns freed memory to the OS and resets the kernel's
// high-water mark of this process's RSS (VmHWM), so that peakRSS reports
// the peak of one benchmark, not of every benchmark run before it in the
// same process. It reports whether the reset worked (Linux).
func resetPeakRSS() bool {
	runtime.GC()
	debug.FreeOSMemory()
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
}

// peakRSS returns VmHWM from /proc/self/status, or else getrusage's
// lifetime peak.
func peakRSS() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss << 10
}

// rolloutBench is one workload of benchRollouts: prompts × group
// deliberation rollouts (5 rounds at most, 96-token turns, a 128-token
// final), concurrency of them in flight, against the simulator sim.
type rolloutBench struct {
	prompts, group, concurrency int
	sim                         simConfig
	history                     rollout.HistoryMode
	kwargs                      map[string]any
}

// benchRollouts runs a rolloutBench against the simulator in a child
// process and reports rollouts per second, parley's CPU per turn request
// (tokenize and completion each count), the simulator's, parley's peak RSS
// during the runs (rollouts are passed to a sink that drops them: this is
// the orchestrator's memory, not a writer's), and per step (one run of
// prompts × group rollouts) the tokens the trainer would process and the
// prompt tokens sent in completion requests.
func benchRollouts(b *testing.B, w rolloutBench) {
	ps := samplePrompts(b, w.prompts)
	url, stop := simChild(b, w.sim)
	client, err := llm.New(llm.Options{Endpoints: []string{url}, MaxConcurrentPerEndpoint: w.concurrency * 2, RequestTimeout: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	r, err := rollout.NewRunner(rollout.RunnerOptions{
		Game:   deliberation.New(deliberation.Options{MaxRounds: 5, TurnTokens: 96, FinalTokens: 128}),
		Policy: client, Model: sim.DefaultModel,
		Sampling:           llm.Sampling{MaxTokens: 96, Temperature: 1, TopP: 1},
		ChatTemplateKwargs: w.kwargs, History: w.history,
		GroupSize: w.group, Concurrency: w.concurrency, Seed: 1,
	})
	if err != nil {
		b.Fatal(err)
	}
	resetPeakRSS()
	b.ResetTimer()
	var total rollout.Summary
	var elapsed time.Duration
	cpu0 := cpuNow()
	for i := 0; i < b.N; i++ {
		sum, err := r.Run(context.Background(), ps, func(*dataset.Rollout) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if sum.Failed > 0 {
			b.Fatalf("%d rollouts failed: %v", sum.Failed, sum.FirstErr)
		}
		total.Rollouts += sum.Rollouts
		total.Requests += sum.Requests
		total.TrainerTokens += sum.TrainerTokens
		total.PromptTokensSent += sum.PromptTokensSent
		total.PrefixBreaks += sum.PrefixBreaks
		total.Sequences += sum.Sequences
		elapsed += sum.Elapsed
	}
	cpu := cpuNow() - cpu0
	b.StopTimer()
	rss := peakRSS()
	simCPU := stop()
	n, rollouts, requests := float64(b.N), float64(total.Rollouts), float64(total.Requests)
	b.ReportMetric(rollouts/elapsed.Seconds(), "rollouts/s")
	b.ReportMetric(requests/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(cpu.Microseconds())/requests, "parley-cpu-µs/req")
	b.ReportMetric(float64(simCPU.Microseconds())/requests, "sim-cpu-µs/req")
	b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MB")
	b.ReportMetric(float64(total.TrainerTokens)/n, "trainer-tokens/step")
	b.ReportMetric(float64(total.PromptTokensSent)/n, "prompt-tokens-sent/step")
	b.ReportMetric(float64(total.PrefixBreaks)/rollouts, "prefix-breaks/rollout")
	b.ReportMetric(float64(total.Sequences)/rollouts, "sequences/rollout")
}

// BenchmarkRolloutsZeroLatency: 64 prompts × 8, 256 in flight, ChatML,
// history tokens, no latency: parley's CPU per request at full speed.
func BenchmarkRolloutsZeroLatency(b *testing.B) {
	benchRollouts(b, rolloutBench{prompts: 64, group: 8, concurrency: 256, history: rollout.HistoryTokens})
}

// BenchmarkRolloutsQwen3 plays the zero-latency workload on Qwen3's
// template (thinking off), every dialogue its 5 rounds, in both history
// modes: what the trainer processes and the prompt tokens sent per step,
// and parley's CPU per request.
func BenchmarkRolloutsQwen3(b *testing.B) {
	for _, h := range []rollout.HistoryMode{rollout.HistoryTokens, rollout.HistoryRerender} {
		b.Run(string(h), func(b *testing.B) {
			benchRollouts(b, rolloutBench{prompts: 64, group: 8, concurrency: 256, sim: qwen3FullRounds, history: h,
				kwargs: map[string]any{"enable_thinking": false}})
		})
	}
}

// BenchmarkRollouts1024Concurrent keeps 1,024 dialogues in flight against a
// simulator with a realistic, heavy-tailed latency (median 300ms).
func BenchmarkRollouts1024Concurrent(b *testing.B) {
	if testing.Short() {
		b.Skip("short")
	}
	benchRollouts(b, rolloutBench{prompts: 128, group: 8, concurrency: 1024, sim: simConfig{latency: 300 * time.Millisecond},
		history: rollout.HistoryTokens})
}

// BenchmarkRollouts5000InFlight keeps 5,000 dialogues in flight (625
// prompts × 8, all started at once) on Qwen3's template, every dialogue
// its 5 rounds, against a simulator with a heavy-tailed latency (median
// 300ms), in both history modes: parley's peak RSS.
func BenchmarkRollouts5000InFlight(b *testing.B) {
	if testing.Short() {
		b.Skip("short")
	}
	for _, h := range []rollout.HistoryMode{rollout.HistoryTokens, rollout.HistoryRerender} {
		b.Run(string(h), func(b *testing.B) {
			cfg := qwen3FullRounds
			cfg.latency = 300 * time.Millisecond
			benchRollouts(b, rolloutBench{prompts: 625, group: 8, concurrency: 5000, sim: cfg, history: h,
				kwargs: map[string]any{"enable_thinking": false}})
		})
	}
}
