package tournament

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/rollout/endowment"
)

// Files and folders of a tournament directory.
const (
	SpecFile     = "tournament.yaml" // the spec, frozen at the first start
	PromptsDir   = "prompts"         // copies of the prompt files played
	PromptsFile  = "prompts.json"    // their hashes
	ScheduleFile = "schedule.json"   // every scheduled game
	GamesDir     = "games"           // one record per finished game
)

// IsDir reports whether dir is a tournament directory (it holds
// tournament.yaml).
func IsDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, SpecFile))
	return err == nil && !st.IsDir()
}

// Record is what a tournament keeps of one game, written atomically as
// games/<id>.json when the game ends: played, or failed after every
// attempt.
type Record struct {
	Match Match `json:"match"`
	// Attempts is how many times the game was played; Errors the error of
	// each failed attempt.
	Attempts int      `json:"attempts"`
	Errors   []string `json:"errors,omitempty"`
	// Failed reports that every attempt failed: the game is left out of
	// the statistics (and counted).
	Failed bool `json:"failed"`
	// Rollout is the game (the last attempt's), token sequences dropped;
	// its roles' Model is the agent's name, Endpoint its server.
	Rollout dataset.Rollout `json:"rollout"`
}

// Outcome parses the game's outcome; nil for a failed game.
func (r *Record) Outcome() (*endowment.Outcome, error) {
	if r.Failed {
		return nil, nil
	}
	return endowment.RolloutOutcome(&r.Rollout)
}

func gamePath(dir, id string) string { return filepath.Join(dir, GamesDir, id+".json") }

func writeRecord(dir string, r *Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("tournament: game %s: %w", r.Match.ID, err)
	}
	if err := fsutil.WriteFileAtomic(gamePath(dir, r.Match.ID), b, 0o644); err != nil {
		return fmt.Errorf("tournament: game %s: %w", r.Match.ID, err)
	}
	return nil
}

// ReadRecords reads every game record of a tournament directory, sorted
// by game id. A record that does not parse is an error naming its file.
func ReadRecords(dir string) ([]Record, error) {
	entries, err := os.ReadDir(filepath.Join(dir, GamesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tournament.ReadRecords: %w", err)
	}
	var out []Record
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || fsutil.IsTemp(name) {
			continue
		}
		path := filepath.Join(dir, GamesDir, name)
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("tournament.ReadRecords: %w", err)
		}
		var r Record
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("tournament.ReadRecords: %s: %w", path, err)
		}
		if r.Match.ID+".json" != name {
			return nil, fmt.Errorf("tournament.ReadRecords: %s: records game %q", path, r.Match.ID)
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Match.ID < out[j].Match.ID })
	return out, nil
}

// ReadSpec reads a tournament directory's frozen spec.
func ReadSpec(dir string) (Spec, error) {
	return LoadSpec(filepath.Join(dir, SpecFile))
}

// promptsRecord is prompts.json.
type promptsRecord struct {
	SHA256 string            `json:"sha256"`
	Files  map[string]string `json:"files"`
}

// freeze writes the spec, the prompt files and their hashes at the first
// start, and on a resume checks that neither changed.
func freeze(dir string, s Spec, p *endowment.Prompts) error {
	canon, err := s.Canonical()
	if err != nil {
		return err
	}
	specPath := filepath.Join(dir, SpecFile)
	old, err := os.ReadFile(specPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Join(dir, GamesDir), 0o755); err != nil {
			return err
		}
		if err := p.WriteFiles(filepath.Join(dir, PromptsDir), func(path string, b []byte) error {
			return fsutil.WriteFileAtomic(path, b, 0o644)
		}); err != nil {
			return err
		}
		b, _ := json.MarshalIndent(promptsRecord{SHA256: p.SHA256, Files: p.Hashes}, "", "  ")
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, PromptsFile), append(b, '\n'), 0o644); err != nil {
			return err
		}
		// The spec last: a directory with tournament.yaml is complete.
		return fsutil.WriteFileAtomic(specPath, canon, 0o644)
	case err != nil:
		return err
	}
	frozen, err := ParseSpec(old)
	if err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	fc, _ := frozen.Canonical()
	if string(fc) != string(canon) {
		return fmt.Errorf("the tournament spec differs from the one frozen in %s when this tournament started: restore it, or start a new directory", specPath)
	}
	b, err := os.ReadFile(filepath.Join(dir, PromptsFile))
	if err != nil {
		return err
	}
	var pr promptsRecord
	if err := json.Unmarshal(b, &pr); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, PromptsFile), err)
	}
	if pr.SHA256 != p.SHA256 {
		return fmt.Errorf("the prompt files (%s) differ from the ones this tournament started with (%s, hashes in %s)", promptsWhere(p), filepath.Join(dir, PromptsDir), PromptsFile)
	}
	return nil
}

func promptsWhere(p *endowment.Prompts) string {
	if p.Dir == "" {
		return "the embedded prompts"
	}
	return p.Dir
}

// writeRollouts writes every game's rollout, in game order, to
// rollouts/step-000000.parquet, so that `parley export` reads a tournament
// like a run.
func writeRollouts(dir string, recs []Record) error {
	w, err := dataset.NewRolloutWriter(dataset.RunDir(dir).RolloutsPath(0), dataset.RolloutWriterOptions{
		Metadata: map[string]string{"parley.tournament": filepath.Base(dir)}})
	if err != nil {
		return err
	}
	for i := range recs {
		if err := w.Write(recs[i].Rollout); err != nil {
			w.Abort()
			return err
		}
	}
	return w.Close()
}
