package train

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/parleyhq/parley/curriculum"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
)

// StateVersion is the version of the state.json format SaveState writes.
const StateVersion = 1

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
	// Seed is the run's seed.
	Seed int64 `json:"seed"`
	// RoleBaseline is grpo.ModeRoleBaseline's baseline after the last step that
	// computed advantages.
	RoleBaseline *grpo.RoleBaseline `json:"role_baseline,omitempty"`
	// Curriculum is the adaptive sampler's statistics after the last
	// step (curriculum.sampler: adaptive).
	Curriculum *curriculum.State `json:"curriculum,omitempty"`
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
	if s.Step < 0 || s.Step > dataset.MaxStep || s.PolicyVersion < 0 {
		return fmt.Errorf("step %d, policy version %d: must not be negative", s.Step, s.PolicyVersion)
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
		return fmt.Errorf("train.SaveState: %w", err)
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("train.SaveState: %w", err)
	}
	f, err := fsutil.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("train.SaveState: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Abort()
		return fmt.Errorf("train.SaveState: %w", err)
	}
	crashpoint.Hit("state-write") // the new state written but not yet in place
	if err := f.Commit(); err != nil {
		return fmt.Errorf("train.SaveState: %w", err)
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
		return State{}, false, fmt.Errorf("train.LoadState: %w", err)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return State{}, false, fmt.Errorf("train.LoadState: %s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return State{}, false, fmt.Errorf("train.LoadState: %s: %w", path, err)
	}
	return s, true, nil
}
