package reward

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/dataset/export"
)

// PythonWorkerModule is the module of the Python judge's worker
// (scripts/parley_tools/reward_worker.py).
const PythonWorkerModule = "parley_tools.reward_worker"

// PythonOptions configure a Python judge (NewPythonJudge).
type PythonOptions struct {
	// Python is the interpreter of the run's Python environment, which
	// has parley_tools installed (or on Env's PYTHONPATH).
	Python string
	// Function is the reward function, "module:function".
	Function string
	// Path lists directories put first on the worker's sys.path (made
	// absolute against the current directory, which is also on it).
	Path []string
	// BatchSize bounds the rollouts sent in one call (default 32); a
	// batch holds the rollouts waiting when the worker is free, so at
	// most the callers' concurrency.
	BatchSize int
	// Timeout bounds one batch, and the worker's start (default 60s).
	Timeout time.Duration
	// Min and Max are the scores' range; a score outside it is a judge
	// failure ([0, 1] when both are 0).
	Min, Max float64
	// Env is added to the worker's environment (a test's PYTHONPATH).
	Env []string
	// Withhold names environment variables the worker does not get: the
	// API keys of parley's config, which the function has no business
	// with.
	Withhold []string
	// Logger receives the worker's stderr, tracebacks and restarts.
	Logger *zap.Logger
}

// PythonScale is the scale of a Python judge's scores: "python
// module:function" over [min, max] ([0, 1] when both are 0).
func PythonScale(function string, min, max float64) dataset.ScoreScale {
	if min == 0 && max == 0 {
		max = 1
	}
	return dataset.ScoreScale{Name: "python " + function, Min: min, Max: max}
}

// PythonJudge scores rollouts with a Python function in a long-lived
// worker process (python -m parley_tools.reward_worker), JSON lines over
// its stdin and stdout, called in batches: the calls waiting when the
// worker is free go in one batch. Each rollout is given as `parley export
// --format jsonl` writes it (export.Record) plus "roles", its roles'
// names. An exception, a bad return value, a score out of range and a
// batch past Timeout are judge failures (the traceback in the log); a
// worker that dies or times out is killed, and the next batch starts a
// new one, with a warning.
type PythonJudge struct {
	opts  PythonOptions
	scale dataset.ScoreScale
	log   *zap.Logger
	reqs  chan *pyCall
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup

	// w is the running worker (nil: none); only the dispatcher touches it.
	w *pyWorker
	// started counts worker starts (tests).
	started int
}

var (
	_ Judge  = (*PythonJudge)(nil)
	_ Scaler = (*PythonJudge)(nil)
)

// pyCall is one Judge call waiting for its batch.
type pyCall struct {
	rollout json.RawMessage
	roles   map[string]bool
	out     chan pyOutcome
}

type pyOutcome struct {
	res Result
	err error
}

// pyResult is the worker's verdict on one rollout.
type pyResult struct {
	Score     *float64           `json:"score"`
	Roles     map[string]float64 `json:"roles"`
	Error     string             `json:"error"`
	Traceback string             `json:"traceback"`
}

// NewPythonJudge starts the worker and waits until it has imported the
// function, so that a wrong module, function or interpreter is an error
// here rather than on every rollout.
func NewPythonJudge(opts PythonOptions) (*PythonJudge, error) {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 32
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 60 * time.Second
	}
	if opts.Min == 0 && opts.Max == 0 {
		opts.Max = 1
	}
	if !(opts.Max > opts.Min) {
		return nil, fmt.Errorf("reward.NewPythonJudge: range [%v, %v] is empty", opts.Min, opts.Max)
	}
	if m, f, ok := strings.Cut(opts.Function, ":"); !ok || m == "" || f == "" {
		return nil, fmt.Errorf("reward.NewPythonJudge: function %q is not module:function", opts.Function)
	}
	if opts.Python == "" {
		return nil, errors.New("reward.NewPythonJudge: no Python interpreter")
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	for i, p := range opts.Path {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("reward.NewPythonJudge: path %q: %w", p, err)
		}
		opts.Path[i] = abs
	}
	j := &PythonJudge{
		opts: opts, scale: PythonScale(opts.Function, opts.Min, opts.Max),
		log:  opts.Logger.With(zap.String("judge", "python "+opts.Function)),
		reqs: make(chan *pyCall), done: make(chan struct{}),
	}
	w, err := j.start()
	if err != nil {
		return nil, err
	}
	j.w = w
	j.wg.Add(1)
	go j.dispatch()
	return j, nil
}

// Name is "python module:function".
func (j *PythonJudge) Name() string { return j.scale.Name }

// Scale is the function's declared range.
func (j *PythonJudge) Scale() dataset.ScoreScale { return j.scale }

// Judge sends r to the worker in the next batch and waits for its verdict.
func (j *PythonJudge) Judge(ctx context.Context, r *dataset.Rollout) (Result, error) {
	rec, err := json.Marshal(pyRollout{Record: export.NewRecord(*r, j.scale), Roles: roleNames(r)})
	if err != nil {
		return Result{}, fmt.Errorf("python judge: %w", err)
	}
	c := &pyCall{rollout: rec, roles: map[string]bool{}, out: make(chan pyOutcome, 1)}
	for _, ro := range r.Roles {
		c.roles[ro.Role] = true
	}
	select {
	case j.reqs <- c:
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-j.done:
		return Result{}, errors.New("python judge: closed")
	}
	select {
	case o := <-c.out:
		return o.res, o.err
	case <-ctx.Done():
		return Result{}, ctx.Err()
	}
}

// pyRollout is what the function is given: the export's record and the
// rollout's role names.
type pyRollout struct {
	export.Record
	Roles []string `json:"roles"`
}

func roleNames(r *dataset.Rollout) []string {
	names := make([]string, 0, len(r.Roles))
	for _, ro := range r.Roles {
		names = append(names, ro.Role)
	}
	return names
}

// Close stops the worker: its stdin closed, killed after a grace period.
func (j *PythonJudge) Close() error {
	j.once.Do(func() { close(j.done) })
	j.wg.Wait()
	return nil
}

// dispatch gathers the waiting calls into batches and runs them, one at
// a time.
func (j *PythonJudge) dispatch() {
	defer j.wg.Done()
	defer func() {
		if j.w != nil {
			j.w.stop()
		}
	}()
	for {
		var first *pyCall
		select {
		case first = <-j.reqs:
		case <-j.done:
			return
		}
		batch := []*pyCall{first}
		// The calls that arrive while the batch is gathered join it: a
		// scorer's concurrent calls arrive within microseconds.
		linger := time.NewTimer(2 * time.Millisecond)
	gather:
		for len(batch) < j.opts.BatchSize {
			select {
			case c := <-j.reqs:
				batch = append(batch, c)
			case <-linger.C:
				break gather
			}
		}
		linger.Stop()
		j.run(batch)
	}
}

// run scores one batch, starting a worker first when the last one died.
func (j *PythonJudge) run(batch []*pyCall) {
	fail := func(err error) {
		for _, c := range batch {
			c.out <- pyOutcome{err: err}
		}
	}
	if j.w == nil {
		j.log.Warn("python judge: restarting the worker")
		w, err := j.start()
		if err != nil {
			fail(err)
			return
		}
		j.w = w
	}
	results, err := j.w.call(batch, j.opts.Timeout, j.done)
	if err != nil {
		j.log.Warn("python judge: the worker failed; its batch fails and the next batch starts a new one", zap.Int("rollouts", len(batch)), zap.Error(err))
		j.w.kill()
		j.w = nil
		fail(fmt.Errorf("python judge %s: %w", j.opts.Function, err))
		return
	}
	for i, c := range batch {
		res, err := j.verdict(results[i], c.roles)
		if err != nil {
			if tb := results[i].Traceback; tb != "" {
				j.log.Warn("python judge: the function raised", zap.String("error", results[i].Error), zap.String("traceback", tb))
			}
			err = fmt.Errorf("python judge %s: %w", j.opts.Function, err)
		}
		c.out <- pyOutcome{res: res, err: err}
	}
}

// verdict checks one result: an error, a score or role scores in range.
func (j *PythonJudge) verdict(r pyResult, roles map[string]bool) (Result, error) {
	inRange := func(v float64) bool { return !math.IsNaN(v) && v >= j.opts.Min && v <= j.opts.Max }
	res := Result{Model: j.Name()}
	switch {
	case r.Error != "":
		return Result{}, errors.New(r.Error)
	case r.Score != nil:
		if !inRange(*r.Score) {
			return Result{}, fmt.Errorf("score %v is outside [%v, %v] (judge.python.min, judge.python.max)", *r.Score, j.opts.Min, j.opts.Max)
		}
		res.Score = *r.Score
	case r.Roles != nil:
		sum := 0.0
		for role, v := range r.Roles {
			if !roles[role] {
				return Result{}, fmt.Errorf("scored role %q, which the rollout does not have (its roles: %v)", role, sortedKeys(roles))
			}
			if !inRange(v) {
				return Result{}, fmt.Errorf("role %s's score %v is outside [%v, %v] (judge.python.min, judge.python.max)", role, v, j.opts.Min, j.opts.Max)
			}
			sum += v
		}
		// The rollout's own score is its roles' mean.
		res.Roles, res.Score = r.Roles, sum/float64(len(r.Roles))
	default:
		return Result{}, errors.New("the worker's result has no score, roles or error")
	}
	return res, nil
}

func sortedKeys(m map[string]bool) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// withhold is env without the variables named in names.
func withhold(env, names []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name != "" && slices.Contains(names, name)
	})
}

// pyWorker is one running worker process.
type pyWorker struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte // stdout lines; closed when stdout ends
	exited chan struct{}
	seq    int
}

// start runs the worker and waits for its ready line.
func (j *PythonJudge) start() (*pyWorker, error) {
	j.started++
	args := []string{"-u", "-m", PythonWorkerModule, "--function", j.opts.Function}
	for _, p := range j.opts.Path {
		args = append(args, "--path", p)
	}
	cmd := exec.Command(j.opts.Python, args...)
	cmd.Env = append(withhold(os.Environ(), j.opts.Withhold), j.opts.Env...)
	// Its own process group, so that a timeout kills what it started;
	// killed with parley.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("python judge: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("python judge: %w", err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("python judge: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("python judge: %s: %w: set judge.python.interpreter (or PARLEY_PYTHON) to the interpreter of the run's Python environment", j.opts.Python, err)
	}
	w := &pyWorker{cmd: cmd, stdin: stdin, lines: make(chan []byte, 1), exited: make(chan struct{})}
	var tail tailBuf
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			tail.add(sc.Text())
			j.log.Info("python judge worker", zap.String("stderr", sc.Text()), zap.Int("pid", cmd.Process.Pid))
		}
	}()
	go func() {
		defer readers.Done()
		defer close(w.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
		for sc.Scan() {
			w.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	go func() {
		readers.Wait()
		_ = cmd.Wait()
		close(w.exited)
	}()
	var ready struct {
		Ready     bool   `json:"ready"`
		Error     string `json:"error"`
		Traceback string `json:"traceback"`
	}
	select {
	case line, ok := <-w.lines:
		if !ok {
			w.stop()
			<-w.exited
			return nil, fmt.Errorf("python judge: %s -m %s exited before it was ready (%v): %s", j.opts.Python, PythonWorkerModule, cmd.ProcessState, tail.String())
		}
		if err := json.Unmarshal(line, &ready); err != nil || (!ready.Ready && ready.Error == "") {
			w.stop()
			return nil, fmt.Errorf("python judge: %s -m %s: first line %.120q is not its ready line", j.opts.Python, PythonWorkerModule, line)
		}
		if !ready.Ready {
			w.stop()
			j.log.Warn("python judge: the function did not import", zap.String("traceback", ready.Traceback))
			return nil, fmt.Errorf("config key judge.python.function: %s", ready.Error)
		}
	case <-time.After(j.opts.Timeout):
		w.kill()
		return nil, fmt.Errorf("python judge: %s -m %s was not ready after %s (judge.python.timeout)", j.opts.Python, PythonWorkerModule, j.opts.Timeout)
	}
	j.log.Info("python judge: worker ready", zap.Int("pid", cmd.Process.Pid), zap.String("python", j.opts.Python))
	return w, nil
}

// call sends one batch and reads its reply, within timeout.
// A closed done (the judge's Close) ends the wait.
func (w *pyWorker) call(batch []*pyCall, timeout time.Duration, done <-chan struct{}) ([]pyResult, error) {
	w.seq++
	rs := make([]json.RawMessage, len(batch))
	for i, c := range batch {
		rs[i] = c.rollout
	}
	line, err := json.Marshal(struct {
		ID       int               `json:"id"`
		Rollouts []json.RawMessage `json:"rollouts"`
	}{w.seq, rs})
	if err != nil {
		return nil, err
	}
	// The write runs beside the timer: a worker that stops reading
	// blocks it once the pipe is full.
	wrote := make(chan error, 1)
	go func() { _, err := w.stdin.Write(append(line, '\n')); wrote <- err }()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case err := <-wrote:
			if err != nil {
				return nil, fmt.Errorf("the worker's stdin: %w", err)
			}
		case l, ok := <-w.lines:
			if !ok {
				<-w.exited
				return nil, fmt.Errorf("the worker exited (%v) during a batch of %d", w.cmd.ProcessState, len(batch))
			}
			var reply struct {
				ID      *int       `json:"id"`
				Results []pyResult `json:"results"`
				Error   string     `json:"error"`
			}
			if err := json.Unmarshal(l, &reply); err != nil {
				return nil, fmt.Errorf("the worker's reply %.120q: %w", l, err)
			}
			if reply.Error != "" {
				return nil, fmt.Errorf("the worker: %s", reply.Error)
			}
			if reply.ID == nil || *reply.ID != w.seq || len(reply.Results) != len(batch) {
				return nil, fmt.Errorf("the worker's reply has id %v and %d results, want id %d and %d", reply.ID, len(reply.Results), w.seq, len(batch))
			}
			return reply.Results, nil
		case <-timer.C:
			return nil, fmt.Errorf("a batch of %d timed out after %s (judge.python.timeout)", len(batch), timeout)
		case <-done:
			return nil, errors.New("the judge was closed during a batch")
		}
	}
}

// stop closes the worker's stdin and kills its process group when it has
// not exited within a grace period.
func (w *pyWorker) stop() {
	_ = w.stdin.Close()
	select {
	case <-w.exited:
		return
	case <-time.After(2 * time.Second):
	}
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.exited
}

// kill kills the worker's process group at once (a worker past its
// timeout).
func (w *pyWorker) kill() {
	_ = w.stdin.Close()
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	<-w.exited
}

// tailBuf keeps the last lines of a worker's stderr, for the error of a
// worker that exits before it is ready.
type tailBuf struct {
	mu    sync.Mutex
	lines []string
}

func (t *tailBuf) add(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, s)
	if len(t.lines) > 20 {
		t.lines = t.lines[1:]
	}
}

func (t *tailBuf) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, "\n")
}
