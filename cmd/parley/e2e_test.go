package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/vllmtest"
	"github.com/parleyhq/parley/metrics"
	"github.com/parleyhq/parley/train"
)

// End-to-end tests of `parley train` with the real parts: vLLM (CPU build)
// serving the tiny model and the PyTorch trainer. They need the project's
// Python environment, the tiny model and, except the quickstart (which
// starts its own vLLM through train.server_command, as a user's run does),
// the shared vLLM server `make test` starts (internal/vllmtest).

func e2eEnv(t *testing.T) (python, model, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("short")
	}
	python, model = vllmtest.Python(t)
	bin = filepath.Join(t.TempDir(), "parley")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return python, model, bin
}

// e2eArgs overrides configs/quickstart.yaml for a small, fast run in dir,
// against the shared vLLM server srv (parley starts no server).
func e2eArgs(python, model, runDir string, srv vllmtest.Server, steps int) []string {
	root, _ := filepath.Abs("../..")
	return []string{
		"train", "--config", filepath.Join(root, "configs", "quickstart.yaml"), "--log-format", "json",
		"--run.dir=" + runDir, "--run.name=e2e", fmt.Sprintf("--train.steps=%d", steps),
		"--policy.endpoints=" + srv.URL, "--policy.model=" + srv.Model,
		"--rollout.prompts_per_step=2", "--rollout.group_size=4",
		"--train.server_command=",
		fmt.Sprintf("--train.trainer_command=%s,-m,parley_trainer,--threads,1", python),
		"--trainer.model=" + model,
	}
}

func startParley(t *testing.T, bin, dir string, args []string, log *os.File) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// trainedSteps counts the "step" events of the trainer's log: how often
// each step was trained, across restarts.
func trainedSteps(t *testing.T, runDir string) map[int]int {
	t.Helper()
	f, err := os.Open(filepath.Join(runDir, "trainer.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev struct {
			Event string `json:"event"`
			Step  int    `json:"step"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Event == "step" {
			out[ev.Step]++
		}
	}
	return out
}

// metricSteps returns the steps of metrics.jsonl's step lines, in file
// order, and of its evaluation lines (kind "eval", train.eval_every).
func metricSteps(t *testing.T, runDir string) (steps, evals []int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Step int
			Kind string
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		if m.Kind == metrics.EvalKind {
			evals = append(evals, m.Step)
		} else {
			steps = append(steps, m.Step)
		}
	}
	return steps, evals
}

// TestTrainSurvivesSIGKILL kills parley with SIGKILL at random points of a
// CPU run several times, resumes it each time, and checks that the steps
// are those of an uninterrupted run in number and order, that no step was
// trained twice and that the trainer consumed each batch exactly once.
func TestTrainSurvivesSIGKILL(t *testing.T) {
	python, model, bin := e2eEnv(t)
	srv := vllmtest.Shared(t)
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	runDir := filepath.Join(dir, "e2e")
	const steps = 6
	args := e2eArgs(python, model, dir, srv, steps)
	logf, _ := os.Create(filepath.Join(dir, "parley.log"))
	defer logf.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for attempt := 0; attempt < 12; attempt++ {
		a := args
		if attempt > 0 {
			a = append(append([]string(nil), args...), "--resume")
		}
		cmd := startParley(t, bin, root, a, logf)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		if kills < 3 {
			// kill somewhere in the middle of the run: after the first
			// batch exists, at a random delay
			deadline := time.Now().Add(3 * time.Minute)
			for time.Now().Before(deadline) {
				if st, ok, _ := train.LoadState(filepath.Join(runDir, "state.json")); ok && st.Step >= kills {
					break
				}
				time.Sleep(200 * time.Millisecond)
			}
			time.Sleep(time.Duration(rng.IntN(4000)) * time.Millisecond)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("parley exited early: %v (log %s)", err, logf.Name())
				}
				goto finished
			default:
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			kills++
			st, _, _ := train.LoadState(filepath.Join(runDir, "state.json"))
			t.Logf("SIGKILL %d at completed step %d", kills, st.Step)
			// its children die with it (Pdeathsig); give the port a moment
			time.Sleep(500 * time.Millisecond)
			continue
		}
		select {
		case err := <-done:
			if err != nil {
				b, _ := os.ReadFile(logf.Name())
				t.Fatalf("resumed parley failed: %v\n%s", err, tail(string(b), 3000))
			}
		case <-time.After(10 * time.Minute):
			_ = cmd.Process.Kill()
			t.Fatal("resumed run did not finish in 10 minutes")
		}
		goto finished
	}
	t.Fatal("the run never finished")
finished:
	if kills == 0 {
		t.Fatal("parley was never killed; the test proves nothing")
	}
	// The quickstart evaluates every 6 steps: step 6's evaluation is in
	// metrics.jsonl once, however the kills fell.
	if got, evals := metricSteps(t, runDir); fmt.Sprint(got) != fmt.Sprint([]int{1, 2, 3, 4, 5, 6}) || fmt.Sprint(evals) != "[6]" {
		t.Errorf("metrics steps = %v, evaluations %v; want 1..6 once each, in order, and one evaluation of step 6", got, evals)
	}
	trained := trainedSteps(t, runDir)
	for s := 1; s <= steps; s++ {
		// A kill between the trainer's DONE and its log line loses the
		// line, never the step; a second line would be a second training.
		if trained[s] > 1 {
			t.Errorf("step %d trained %d times, want once", s, trained[s])
		}
		if _, ok, err := handshake.ReadDone(filepath.Join(runDir, "checkpoints", dataset.StepName(s))); !ok || err != nil {
			t.Errorf("step %d has no DONE: %v", s, err)
		}
		ready, err := dataset.VerifyBatch(dataset.RunDir(runDir).BatchPath(s), s)
		if err != nil {
			t.Errorf("step %d batch: %v", s, err)
		} else if ready.PolicyVersion != s-1 {
			t.Errorf("step %d sampled by policy %d, want %d", s, ready.PolicyVersion, s-1)
		}
	}
	t.Logf("%d kills; trained %v", kills, trained)
}

// TestTrainTrainerKilled kills the trainer in the middle of a step: parley
// says so, waits, and goes on once its supervisor has brought the trainer
// back.
func TestTrainTrainerKilled(t *testing.T) {
	python, model, bin := e2eEnv(t)
	srv := vllmtest.Shared(t)
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	runDir := filepath.Join(dir, "e2e")
	logPath := filepath.Join(dir, "parley.log")
	logf, _ := os.Create(logPath)
	defer logf.Close()
	cmd := startParley(t, bin, root, e2eArgs(python, model, dir, srv, 4), logf)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	pidRe := regexp.MustCompile(`"msg":"started trainer","pid":(\d+)`)
	var pid int
	deadline := time.Now().Add(3 * time.Minute)
	for pid == 0 && time.Now().Before(deadline) {
		b, _ := os.ReadFile(logPath)
		if m := pidRe.FindSubmatch(b); m != nil {
			if _, err := os.Stat(filepath.Join(runDir, "batches", "step-000002.ready")); err == nil {
				pid, _ = strconv.Atoi(string(m[1]))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("no trainer pid or no second batch in 3 minutes")
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL) // the trainer's process group
	select {
	case err := <-done:
		if err != nil {
			b, _ := os.ReadFile(logPath)
			t.Fatalf("parley failed after the trainer was killed: %v\n%s", err, tail(string(b), 3000))
		}
	case <-time.After(8 * time.Minute):
		_ = cmd.Process.Kill()
		t.Fatal("the run did not finish after the trainer was killed")
	}
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "trainer exited") || !strings.Contains(string(b), "restarting trainer") {
		t.Errorf("parley did not say the trainer was gone:\n%s", tail(string(b), 3000))
	}
	if got, _ := metricSteps(t, runDir); fmt.Sprint(got) != fmt.Sprint([]int{1, 2, 3, 4}) {
		t.Errorf("metrics steps = %v", got)
	}
	for s, n := range trainedSteps(t, runDir) {
		if n > 1 {
			t.Errorf("step %d trained %d times", s, n)
		}
	}
}

// scrape polls url every 200 ms until stop is called, which returns the
// last body read after a step had finished (parley_steps_total not 0).
func scrape(url string) (stop func() string) {
	done := make(chan struct{})
	out := make(chan string, 1)
	go func() {
		last := ""
		for {
			select {
			case <-done:
				out <- last
				return
			case <-time.After(200 * time.Millisecond):
			}
			resp, err := http.Get(url)
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if body := string(b); strings.Contains(body, "\nparley_steps_total ") && !strings.Contains(body, "\nparley_steps_total 0\n") {
				last = body
			}
		}
	}()
	return func() string { close(done); return <-out }
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// runQuickstart runs configs/<name>.yaml in dir, parley starting vLLM
// (with serverFlags) and the trainer as in a user's run (only the
// interpreter, the model folder and the port are the test's), and returns
// its metrics.jsonl.
func runQuickstart(t *testing.T, bin, root, dir, name, python, model string, serverFlags ...string) []byte {
	t.Helper()
	port := vllmtest.FreePort(t)
	args := []string{
		"train", "--config", filepath.Join(root, "configs", name+".yaml"), "--log-format", "json",
		"--run.dir=" + dir, fmt.Sprintf("--policy.endpoints=http://127.0.0.1:%d", port),
		"--train.server_command=" + strings.Join(append(vllmtest.ServerCommand(python, model, port), serverFlags...), ","),
		fmt.Sprintf("--train.trainer_command=%s,-m,parley_trainer", python),
		"--trainer.model=" + model,
	}
	logf, _ := os.Create(filepath.Join(dir, "parley.log"))
	defer logf.Close()
	cmd := startParley(t, bin, root, args, logf)
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("%s failed: %v\n%s", name, err, tail(string(b), 3000))
	}
	b, err := os.ReadFile(filepath.Join(dir, name, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestQuickstartLearns runs the README's main job (configs/quickstart.yaml,
// a real CPU training run) under its fixed seed and checks that it learns
// on all three of seed 000 figure 2's panels: the mean reward and the
// agreement rate of the last 5 steps clearly exceed the first 5's, and the
// agents that agree do so early. parley
// starts vLLM itself through train.server_command, as in a user's run
// (only the interpreter, the model folder and the port are this test's).
func TestQuickstartLearns(t *testing.T) {
	python, model, bin := e2eEnv(t)
	root, _ := filepath.Abs("../..")
	checkQuickstartLearns(t, runQuickstart(t, bin, root, t.TempDir(), "quickstart", python, model))
}

// checkQuickstartLearns checks the quickstart's metrics.jsonl b (see
// TestQuickstartLearns).
func checkQuickstartLearns(t testing.TB, b []byte) {
	t.Helper()
	type step struct {
		Step              int      `json:"step"`
		Kind              string   `json:"kind"`
		RewardMean        float64  `json:"reward_mean"`
		AgreementRate     float64  `json:"agreement_rate"`
		RoundsToAgreement *float64 `json:"rounds_to_agreement"`
		MeanRounds        *float64 `json:"mean_rounds"`
	}
	var steps []step
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m step
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m.Kind == "" && m.MeanRounds != nil { // a step's line, not an evaluation's
			steps = append(steps, m)
		}
	}
	if len(steps) < 10 {
		t.Fatalf("%d steps, want at least 10", len(steps))
	}
	mean := func(f func(step) float64, xs []step) float64 {
		s := 0.0
		for _, x := range xs {
			s += f(x)
		}
		return s / float64(len(xs))
	}
	first, last := steps[:5], steps[len(steps)-5:]
	reward := func(s step) float64 { return s.RewardMean }
	agreement := func(s step) float64 { return s.AgreementRate }
	for _, s := range steps {
		rounds := "none"
		if r := s.RoundsToAgreement; r != nil {
			rounds = fmt.Sprintf("%.2f", *r)
		}
		t.Logf("step %d: reward %.3f, agreement %.2f, rounds %.2f, to agreement %s", s.Step, s.RewardMean, s.AgreementRate, *s.MeanRounds, rounds)
		// A step has rounds to agreement exactly when some rollout agreed
		// (metrics.jsonl leaves the key out otherwise), within the limit.
		if r := s.RoundsToAgreement; (r != nil) != (s.AgreementRate > 0) || r != nil && (*r < 1 || *r > 3) {
			t.Errorf("step %d: agreement rate %.2f with rounds to agreement %s: want rounds in [1, 3] exactly when the rate is above 0", s.Step, s.AgreementRate, rounds)
		}
	}
	// Figure 2's three panels move: the reward (half the final's share of
	// "agree", half agreement) rises, the agreement rate rises, and the
	// agents that agree do so early. Rounds to agreement, not the mean
	// rounds, which fall on their own as agreement rises (a dialogue
	// without agreement plays all 3): agreements by chance end anywhere
	// in rounds 1–3 (about 2.2 on average: the two consecutive marked
	// turns are any of turns 1–6's five pairs), learned ones in round 1.
	if mean(reward, last) < mean(reward, first)+0.2 {
		t.Errorf("mean reward of the last 5 steps %.3f does not exceed the first 5's %.3f by 0.2", mean(reward, last), mean(reward, first))
	}
	if mean(agreement, last) < mean(agreement, first)+0.3 {
		t.Errorf("mean agreement rate of the last 5 steps %.3f does not exceed the first 5's %.3f by 0.3", mean(agreement, last), mean(agreement, first))
	}
	sum := 0.0
	for _, s := range last {
		if s.RoundsToAgreement == nil {
			t.Fatalf("step %d, one of the last 5: no rollout agreed", s.Step)
		}
		sum += *s.RoundsToAgreement
	}
	if r := sum / float64(len(last)); r > 1.5 {
		t.Errorf("mean rounds to agreement of the last 5 steps %.2f, want at most 1.5: the agents do not learn to agree early", r)
	}
}

// TestQuickstartFullLearns (issue 19, item 6) runs the full-weights
// quickstart (configs/quickstart-full.yaml: every weight trained, each
// step's weights reloaded from disk into vLLM through its RL API, served
// with the dev mode) under its fixed seed: every update is verified
// (version, checksums, probe) and timed, and the run learns: the mean
// reward of the last 5 steps exceeds the first 5's.
func TestQuickstartFullLearns(t *testing.T) {
	python, _, bin := e2eEnv(t)
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	// The tiny model with its own output head (make tiny-model-untied).
	model := filepath.Join(dir, "tiny-untied")
	if out, err := exec.Command(python, "-m", "parley_tools.tiny_model", "--out", model, "--seed", "0", "--untied").CombinedOutput(); err != nil {
		t.Fatalf("tiny_model --untied: %v\n%s", err, out)
	}
	b := runQuickstart(t, bin, root, dir, "quickstart-full", python, model, "--full-weights")
	type step struct {
		Step          int      `json:"step"`
		RewardMean    float64  `json:"reward_mean"`
		AgreementRate float64  `json:"agreement_rate"`
		Update        *float64 `json:"update_seconds"`
		Pause         *float64 `json:"update_pause_seconds"`
		Checksums     float64  `json:"update_checksums_compared"`
		Probe         *float64 `json:"update_probe_mean_abs_logprob_diff"`
	}
	var steps []step
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m step
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		steps = append(steps, m)
	}
	if len(steps) < 10 {
		t.Fatalf("%d steps, want at least 10", len(steps))
	}
	mean := func(xs []step) float64 { // reward
		s := 0.0
		for _, x := range xs {
			s += x.RewardMean
		}
		return s / float64(len(xs))
	}
	for _, s := range steps {
		if s.Update == nil || s.Pause == nil || s.Checksums < 1 || s.Probe == nil || *s.Probe > 1e-3 {
			t.Errorf("step %d: update %v s, paused %v s, %g checksums compared, probe %v: want every update timed and verified", s.Step, s.Update, s.Pause, s.Checksums, s.Probe)
			continue
		}
		t.Logf("step %d: reward %.3f, agreement %.2f, update %.3f s (paused %.3f s), probe |Δ| %.2g", s.Step, s.RewardMean, s.AgreementRate, *s.Update, *s.Pause, *s.Probe)
	}
	first, last := steps[:5], steps[len(steps)-5:]
	// Measured: 0.004 → 0.44 (reward), 0.006 → 0.96 (agreement).
	if mean(last) < mean(first)+0.2 {
		t.Errorf("mean reward of the last 5 steps %.3f does not exceed the first 5's %.3f by 0.2", mean(last), mean(first))
	}
	agree := func(xs []step) float64 {
		s := 0.0
		for _, x := range xs {
			s += x.AgreementRate
		}
		return s / float64(len(xs))
	}
	if agree(last) < agree(first)+0.3 {
		t.Errorf("mean agreement rate of the last 5 steps %.3f does not exceed the first 5's %.3f by 0.3", agree(last), agree(first))
	}
}

// TestTrainHTTPHandshake runs the loop with the trainer on the HTTP
// handshake: the trainer long-polls for batches, downloads them and uploads
// its checkpoints with the bearer token parley generated for it.
func TestTrainHTTPHandshake(t *testing.T) {
	python, model, bin := e2eEnv(t)
	srv := vllmtest.Shared(t)
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	runDir := filepath.Join(dir, "e2e")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metricsAddr := ln.Addr().String()
	ln.Close()
	args := append(e2eArgs(python, model, dir, srv, 3), "--train.handshake=http", "--train.token_env=PARLEY_E2E_TOKEN",
		"--train.metrics_addr="+metricsAddr)
	logf, _ := os.Create(filepath.Join(dir, "parley.log"))
	defer logf.Close()
	cmd := startParley(t, bin, root, args, logf)
	stopScrape := scrape("http://" + metricsAddr + "/metrics")
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(logf.Name())
		t.Fatalf("train over HTTP failed: %v\n%s", err, tail(string(b), 3000))
	}
	// Prometheus, scraped while the run went on (issue 12 item 9).
	body := stopScrape()
	for _, want := range []string{"parley_steps_total ", "parley_last_step_reward_mean ", "parley_rollouts_total{outcome=\"ok\"} ", "parley_policy_requests_total "} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics during the run lacks %q:\n%s", want, tail(body, 2000))
		}
	}
	if got, _ := metricSteps(t, runDir); fmt.Sprint(got) != fmt.Sprint([]int{1, 2, 3}) {
		t.Errorf("metrics steps = %v", got)
	}
	b, _ := os.ReadFile(logf.Name())
	if !strings.Contains(string(b), "handshake server listening") {
		t.Errorf("no handshake server in the log")
	}
	for s := 1; s <= 3; s++ {
		done, ok, err := handshake.ReadDone(filepath.Join(runDir, "checkpoints", dataset.StepName(s)))
		if !ok || err != nil {
			t.Fatalf("step %d: no DONE uploaded: %v", s, err)
		}
		if _, err := os.Stat(filepath.Join(done.AdapterPath, "adapter_model.safetensors")); err != nil {
			t.Errorf("step %d: the uploaded checkpoint has no adapter: %v", s, err)
		}
	}
}
