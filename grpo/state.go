package grpo

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/parleyhq/parley/internal/fsutil"
	"io/fs"
	"os"
	"slices"
)

// StateVersion is the version of the state.json format SaveState writes.
const StateVersion = 1

// Phase is how far an in-flight step got. The phases follow each other in
// this order; resuming a step redoes what comes after its phase.
type Phase string

// Phases of a step.
const (
	// PhaseSampled: rollouts sampled and scored, rollouts/step-N.parquet
	// written.
	PhaseSampled Phase = "sampled"
	// PhaseBatchWritten: batches/step-N.parquet and its .ready written.
	PhaseBatchWritten Phase = "batch_written"
	// PhaseTrained: the trainer wrote checkpoints/step-N/DONE.
	PhaseTrained Phase = "trained"
	// PhaseLoaded: the adapter is loaded into every inference endpoint;
	// the next State.Step is this step.
	PhaseLoaded Phase = "loaded"
)

// Phases lists the phases in order.
var Phases = []Phase{PhaseSampled, PhaseBatchWritten, PhaseTrained, PhaseLoaded}

// Valid reports whether p is one of Phases.
func (p Phase) Valid() bool { return slices.Contains(Phases, p) }

// Cursor is the curriculum position: the next prompt row to sample is row
// Offset of epoch Epoch's order.
type Cursor struct {
	Epoch  int `json:"epoch"`
	Offset int `json:"offset"`
}

// PendingStep is a step started but not completed.
type PendingStep struct {
	Step int `json:"step"`
	// Phase is the last phase the step completed.
	Phase Phase `json:"phase"`
	// PolicyVersion is the policy that sampled the step.
	PolicyVersion int `json:"policy_version"`
	// CursorBefore and CursorAfter are the curriculum positions before and
	// after the step drew its prompts, so a resume draws the same prompts.
	CursorBefore Cursor `json:"cursor_before"`
	CursorAfter  Cursor `json:"cursor_after"`
	// StartedUnixMS is when the step started.
	StartedUnixMS int64 `json:"started_unix_ms,omitempty"`
}

// State is state.json: everything a crashed run needs to resume without
// losing or repeating a batch.
type State struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	// Step is the last completed step (0: none).
	Step int `json:"step"`
	// PolicyVersion is the version of the policy now served (0: the base
	// model).
	PolicyVersion int `json:"policy_version"`
	// Cursor is the curriculum position after the last completed step.
	Cursor Cursor `json:"cursor"`
	// Seed is the run's seed.
	Seed int64 `json:"seed"`
	// RoleBaseline is ModeRoleBaseline's baseline after the last step that
	// computed advantages.
	RoleBaseline *RoleBaseline `json:"role_baseline,omitempty"`
	// Pending lists the steps in flight, in step order (two with
	// max_staleness 1: step N training while N+1 samples).
	Pending []PendingStep `json:"pending,omitempty"`
	// Adapter is the name of the adapter loaded into the inference
	// endpoints ("" for the base model).
	Adapter string `json:"adapter,omitempty"`
	// Nonce makes this run's adapter names unique, so that a new run
	// against a server still holding another run's adapters never samples
	// from them.
	Nonce string `json:"nonce,omitempty"`
	// UpdatedUnixMS is when the state was last saved.
	UpdatedUnixMS int64 `json:"updated_unix_ms,omitempty"`
}

// Validate checks the invariants of s.
func (s State) Validate() error {
	if s.Version < 0 || s.Version > StateVersion {
		return fmt.Errorf("state version %d, this build reads up to %d", s.Version, StateVersion)
	}
	if s.Step < 0 || s.Step > MaxStep || s.PolicyVersion < 0 {
		return fmt.Errorf("step %d, policy version %d: must not be negative", s.Step, s.PolicyVersion)
	}
	if s.Cursor.Epoch < 0 || s.Cursor.Offset < 0 {
		return fmt.Errorf("cursor %+v: must not be negative", s.Cursor)
	}
	last := s.Step
	for _, p := range s.Pending {
		if !p.Phase.Valid() {
			return fmt.Errorf("pending step %d: unknown phase %q", p.Step, p.Phase)
		}
		if p.Step <= last || p.Step > MaxStep {
			return fmt.Errorf("pending step %d: must follow step %d", p.Step, last)
		}
		last = p.Step
	}
	return nil
}

// SaveState validates s and writes it to path atomically: a temp file in the
// same directory, fsynced, renamed over path, then the directory fsynced. A
// zero Version is written as StateVersion.
func SaveState(path string, s State) error {
	if s.Version == 0 {
		s.Version = StateVersion
	}
	if err := s.Validate(); err != nil {
		return fmt.Errorf("grpo.SaveState: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("grpo.SaveState: %w", err)
	}
	if err := fsutil.WriteFileAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("grpo.SaveState: %w", err)
	}
	return nil
}

// LoadState reads state.json. A missing file is (State{}, false, nil): a new
// run. An unreadable, malformed or invalid file is an error.
func LoadState(path string) (State, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return State{}, false, nil
	}
	if err != nil {
		return State{}, false, fmt.Errorf("grpo.LoadState: %w", err)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, false, fmt.Errorf("grpo.LoadState: %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return State{}, false, fmt.Errorf("grpo.LoadState: %s: %w", path, err)
	}
	return s, true, nil
}
