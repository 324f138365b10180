package handshake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
)

// Done is the DONE marker the trainer writes last in a step's checkpoint
// directory, as one JSON object:
//
//	{"step": 42, "metrics": {"loss": 0.12, "kl": 0.0}, "adapter_path": "…"}
//
// adapter_path is optional; when absent the adapter is the checkpoint
// directory itself. Unknown fields are ignored. Metrics must be finite
// (Python: json.dump(..., allow_nan=False)).
type Done struct {
	Step        int                `json:"step"`
	Metrics     map[string]float64 `json:"metrics"`
	AdapterPath string             `json:"adapter_path,omitempty"`
}

// RefusedFile is the marker a trainer writes in a step's checkpoint
// directory, instead of DONE, when it refuses the step's batch (a schema
// it does not read, a checksum that does not match): {"step": N,
// "reason": "…"}. parley stops the run with the reason.
const RefusedFile = "REFUSED"

// Refused is a trainer's refusal of a step's batch.
type Refused struct {
	Step   int    `json:"step"`
	Reason string `json:"reason"`
}

// ReadRefused reads checkpointDir/REFUSED; ok is false when there is none
// (or it does not parse yet).
func ReadRefused(checkpointDir string) (Refused, bool) {
	b, err := os.ReadFile(filepath.Join(checkpointDir, RefusedFile))
	if err != nil {
		return Refused{}, false
	}
	var r Refused
	if json.Unmarshal(b, &r) != nil || r.Reason == "" {
		return Refused{}, false
	}
	return r, true
}

// maxDoneBytes bounds a DONE marker.
const maxDoneBytes = 1 << 20

// DefaultDonePoll is WaitDone's poll interval when given 0.
const DefaultDonePoll = 500 * time.Millisecond

// parseDone decodes a DONE marker; its errors do not say where the
// marker came from (the caller does: ReadDone its path, an upload its
// member).
func parseDone(b []byte) (Done, error) {
	var d Done
	if len(b) > maxDoneBytes {
		return d, fmt.Errorf("%d bytes, limit %d", len(b), maxDoneBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		return d, fmt.Errorf("not a DONE marker: %w", err)
	}
	if dec.More() {
		return d, errors.New("trailing data after the JSON object")
	}
	if d.Step < 0 || d.Step > dataset.MaxStep {
		return d, fmt.Errorf("step %d out of range", d.Step)
	}
	return d, nil
}

// checkDoneStep checks a marker read from dir against the step in dir's name
// (when dir is named step-N) and fills AdapterPath.
func checkDoneStep(dir string, d *Done) error {
	if n, ok := dataset.ParseStepName(filepath.Base(filepath.Clean(dir))); ok && n != d.Step {
		return fmt.Errorf("is for step %d, its folder's is %d", d.Step, n)
	}
	if d.AdapterPath == "" {
		d.AdapterPath = dir
	}
	return nil
}

// ReadDone reads checkpointDir/DONE. A missing marker is (Done{}, false,
// nil). When checkpointDir is named step-N the marker's step must be N. An
// empty AdapterPath is returned as checkpointDir. Errors name the
// marker's path.
func ReadDone(checkpointDir string) (Done, bool, error) {
	path := filepath.Join(checkpointDir, dataset.DoneFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Done{}, false, nil
	}
	if err != nil {
		return Done{}, false, fmt.Errorf("handshake.ReadDone: %w", err)
	}
	d, err := parseDone(b)
	if err == nil {
		err = checkDoneStep(checkpointDir, &d)
	}
	if err != nil {
		return Done{}, false, fmt.Errorf("handshake.ReadDone: %s: %w", path, err)
	}
	return d, true, nil
}

// WriteDone writes checkpointDir/DONE atomically (the trainer's side of file
// mode; the handshake server uses it after an upload).
func WriteDone(checkpointDir string, d Done) error {
	for k, v := range d.Metrics {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("handshake.WriteDone: metric %q is %v", k, v)
		}
	}
	b, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("handshake.WriteDone: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(checkpointDir, dataset.DoneFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("handshake.WriteDone: %w", err)
	}
	return nil
}

// WaitDone polls checkpointDir/DONE every poll (0: DefaultDonePoll) until it
// appears, and returns it as ReadDone does. The trainer writes DONE
// atomically, so a marker that does not parse is read again on the next
// poll, and is an error once it stays unchanged (same size and modification
// time) over two polls. It returns ctx's error, wrapped, when ctx ends
// first.
func WaitDone(ctx context.Context, checkpointDir string, poll time.Duration) (Done, error) {
	if poll <= 0 {
		poll = DefaultDonePoll
	}
	path := filepath.Join(checkpointDir, dataset.DoneFile)
	var badInfo fs.FileInfo
	var lastErr error
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return Done{}, fmt.Errorf("handshake.WaitDone: %w (last: %w)", ctx.Err(), lastErr)
			}
			return Done{}, fmt.Errorf("handshake.WaitDone: %s: %w", path, ctx.Err())
		case <-t.C:
		}
		info, statErr := os.Stat(path)
		if statErr == nil {
			d, ok, err := ReadDone(checkpointDir)
			if err == nil && ok {
				return d, nil
			}
			if err != nil {
				lastErr = err
				if badInfo != nil && badInfo.Size() == info.Size() && badInfo.ModTime().Equal(info.ModTime()) {
					return Done{}, err
				}
				badInfo = info
			}
		} else if !errors.Is(statErr, fs.ErrNotExist) {
			return Done{}, fmt.Errorf("handshake.WaitDone: %w", statErr)
		}
		t.Reset(poll)
	}
}
