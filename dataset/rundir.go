package dataset

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/parleyhq/parley/internal/fsutil"
)

// File and directory names of a run directory.
const (
	ConfigFile         = "config.yaml"
	StateFile          = "state.json"
	BatchesDirName     = "batches"
	RolloutsDirName    = "rollouts"
	CheckpointsDirName = "checkpoints"
	MetricsFile        = "metrics.jsonl"
	EvalsDirName       = "evals"
	// AuditDirName holds the audit judge's record of each audited step
	// (judge.audit).
	AuditDirName  = "audit"
	LeagueDirName = "league"
	// StreamDirName holds a streaming run's journal of finished groups
	// and the rollouts of those no written batch has taken yet.
	StreamDirName = "stream"
	// LockFile holds the PID of the parley process training the run, which
	// holds an exclusive flock on it (RunDir.Lock).
	LockFile = "lock"
	// DoneFile is the marker the trainer writes, last, inside a step's
	// checkpoint directory.
	DoneFile = "DONE"
	// ParquetExt and ReadyExt are the extensions of a batch and its marker.
	ParquetExt = ".parquet"
	ReadyExt   = ".ready"
	// SidecarExt is the extension of a step's sidecar in rollouts/.
	SidecarExt = ".metrics.json"
)

// RunDir is the root of one run's directory; its layout is defined here and
// nowhere else (the trainer's side is the handshake contract of
// docs/contracts.md, and package handshake):
//
//	config.yaml                       the resolved config, frozen at start
//	lock                              the PID of the parley training it (RunDir.Lock)
//	state.json                        see State
//	batches/step-000042.parquet       the batch of step 42
//	batches/step-000042.ready         its dataset.Ready marker
//	rollouts/step-000042.parquet      its rollout records
//	rollouts/step-000042.metrics.json its sampling metrics (the sidecar, see SidecarPath)
//	checkpoints/step-000042/          the adapter trained on it, then DONE
//	metrics.jsonl                     one line per step, one per evaluation and one per audit
//	evals/step-000042.json            the evaluation of step 42's adapter (train.eval_every)
//	audit/step-000042.json            the audit judge's scores of step 42's sample (judge.audit)
//
// Steps are numbered from 1 (State.Step 0 means none completed) and written
// with at least six digits. The path methods take 0 <= step <= MaxStep.
type RunDir string

// MaxStep is the largest step ParseStepName and the handshake accept.
const MaxStep = 999_999_999

// StepName is "step-%06d".
func StepName(step int) string { return fmt.Sprintf("step-%06d", step) }

// ParseStepName parses "step-N" as StepName writes it (N of six to nine
// decimal digits, no sign, no extra leading zeros) and reports whether name
// has that form.
func ParseStepName(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "step-")
	if !ok || len(digits) < 6 || len(digits) > 9 {
		return 0, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(digits)
	if err != nil || StepName(n) != name {
		return 0, false
	}
	return n, true
}

// Root is the run directory itself.
func (d RunDir) Root() string { return string(d) }

// ConfigPath is config.yaml.
func (d RunDir) ConfigPath() string { return filepath.Join(string(d), ConfigFile) }

// StatePath is state.json.
func (d RunDir) StatePath() string { return filepath.Join(string(d), StateFile) }

// MetricsPath is metrics.jsonl.
func (d RunDir) MetricsPath() string { return filepath.Join(string(d), MetricsFile) }

// BatchesDir is batches/.
func (d RunDir) BatchesDir() string { return filepath.Join(string(d), BatchesDirName) }

// BatchPath is batches/step-N.parquet.
func (d RunDir) BatchPath(step int) string {
	return filepath.Join(string(d), BatchesDirName, StepName(step)+ParquetExt)
}

// ReadyPath is batches/step-N.ready.
func (d RunDir) ReadyPath(step int) string { return ReadyPathOf(d.BatchPath(step)) }

// ReadyPathOf is the .ready marker beside a batch file: its path with the
// .parquet extension replaced.
func ReadyPathOf(batchPath string) string {
	return strings.TrimSuffix(batchPath, ParquetExt) + ReadyExt
}

// RolloutsDir is rollouts/.
func (d RunDir) RolloutsDir() string { return filepath.Join(string(d), RolloutsDirName) }

// RolloutsPath is rollouts/step-N.parquet.
func (d RunDir) RolloutsPath(step int) string {
	return filepath.Join(string(d), RolloutsDirName, StepName(step)+ParquetExt)
}

// SidecarPath is rollouts/step-N.metrics.json: what a step's sampling
// leaves beside its rollouts for the step's metrics line and the role
// baseline, so that a resumed run that skips the written batch has both
// (the training loop writes it; the HTTP handshake sends its metrics with
// the step's batch).
func (d RunDir) SidecarPath(step int) string {
	return filepath.Join(string(d), RolloutsDirName, StepName(step)+SidecarExt)
}

// CheckpointsDir is checkpoints/.
func (d RunDir) CheckpointsDir() string { return filepath.Join(string(d), CheckpointsDirName) }

// CheckpointDir is checkpoints/step-N/.
func (d RunDir) CheckpointDir(step int) string {
	return filepath.Join(string(d), CheckpointsDirName, StepName(step))
}

// EvalsDir is evals/.
func (d RunDir) EvalsDir() string { return filepath.Join(string(d), EvalsDirName) }

// AuditDir is audit/.
func (d RunDir) AuditDir() string { return filepath.Join(string(d), AuditDirName) }

// AuditPath is audit/step-N.json.
func (d RunDir) AuditPath(step int) string {
	return filepath.Join(string(d), AuditDirName, StepName(step)+".json")
}

// EvalPath is evals/step-N.json.
func (d RunDir) EvalPath(step int) string {
	return filepath.Join(string(d), EvalsDirName, StepName(step)+".json")
}

// LeagueDir is league/: the league's state after each step.
func (d RunDir) LeagueDir() string { return filepath.Join(string(d), LeagueDirName) }

// LeaguePath is league/step-N.json.
func (d RunDir) LeaguePath(step int) string {
	return filepath.Join(string(d), LeagueDirName, StepName(step)+".json")
}

// StreamDir is the streaming run's folder (StreamDirName).
func (d RunDir) StreamDir() string { return filepath.Join(string(d), StreamDirName) }

// StreamJournalPath is the streaming run's journal of finished groups.
func (d RunDir) StreamJournalPath() string { return filepath.Join(d.StreamDir(), "journal.jsonl") }

// StreamGroupPath is the rollouts of a finished group a written batch has
// not taken yet.
func (d RunDir) StreamGroupPath(groupID string) string {
	return filepath.Join(d.StreamDir(), "groups", groupID+ParquetExt)
}

// DonePath is checkpoints/step-N/DONE.
func (d RunDir) DonePath(step int) string { return filepath.Join(d.CheckpointDir(step), DoneFile) }

// Files lists the run files the directory holds (config.yaml, state.json,
// metrics.jsonl, and batches/, rollouts/ or checkpoints/ when not empty):
// any of them means a run exists there. A missing directory holds none.
func (d RunDir) Files() ([]string, error) {
	var out []string
	for _, name := range []string{ConfigFile, StateFile, MetricsFile} {
		if _, err := os.Stat(filepath.Join(string(d), name)); err == nil {
			out = append(out, name)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("dataset.RunDir.Files: %w", err)
		}
	}
	for _, name := range []string{BatchesDirName, RolloutsDirName, CheckpointsDirName} {
		entries, err := os.ReadDir(filepath.Join(string(d), name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("dataset.RunDir.Files: %w", err)
		}
		for _, e := range entries {
			if !fsutil.IsTemp(e.Name()) {
				out = append(out, name+"/")
				break
			}
		}
	}
	return out, nil
}

// ErrLocked is returned by RunDir.Lock when another process holds the run.
var ErrLocked = errors.New("the run directory is in use")

// Lock takes the run directory for this process: an exclusive flock on its
// lock file, which then holds this process's PID. It fails at once with
// ErrLocked, naming the holder's PID, when another process holds it; the
// kernel drops the lock when the holder exits, however it dies, so a
// crashed run never leaves it locked. unlock releases it.
func (d RunDir) Lock() (unlock func(), err error) {
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return nil, fmt.Errorf("dataset.RunDir.Lock: %w", err)
	}
	path := filepath.Join(string(d), LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("dataset.RunDir.Lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another process"
			if pid := strings.TrimSpace(string(b)); pid != "" {
				who += " (pid " + pid + ")"
			}
			return nil, fmt.Errorf("dataset.RunDir.Lock: %s: %w by %s: wait for it to finish or stop it", d, ErrLocked, who)
		}
		return nil, fmt.Errorf("dataset.RunDir.Lock: %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return func() { f.Close() }, nil
}

// Create makes the run directory and its batches/, rollouts/,
// checkpoints/ and evals/ subdirectories; existing ones are kept.
func (d RunDir) Create() error {
	if d == "" {
		return fmt.Errorf("dataset.RunDir.Create: empty path")
	}
	for _, p := range []string{d.BatchesDir(), d.RolloutsDir(), d.CheckpointsDir(), d.EvalsDir()} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("dataset.RunDir.Create: %w", err)
		}
	}
	return nil
}

// RolloutFileName is the rollouts file `parley rollout` writes in its
// output directory.
const RolloutFileName = "rollouts.parquet"

// StepFile is a per-step file of a run directory.
type StepFile struct {
	Step int
	Path string
}

// RolloutFiles lists dir/step-N.parquet files with minStep <= N and
// (maxStep == 0 or N <= maxStep), in step order.
func RolloutFiles(dir string, minStep, maxStep int) ([]StepFile, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []StepFile
	for _, e := range entries {
		name, isParquet := strings.CutSuffix(e.Name(), ParquetExt)
		step, ok := ParseStepName(name)
		if !isParquet || !ok || e.IsDir() || step < minStep || (maxStep != 0 && step > maxStep) {
			continue
		}
		out = append(out, StepFile{Step: step, Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}
