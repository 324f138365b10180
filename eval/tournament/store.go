package tournament

import (
	"crypto/sha256"
	"encoding/hex"
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
	"github.com/parleyhq/parley/rollout"
)

// Files and folders of a tournament directory.
const (
	SpecFile     = "tournament.yaml" // the spec, frozen at the first start
	PromptsDir   = "prompts"         // copies of the game's files (rollout.Tournament.Files)
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

// Game is the record as a game's tournament report reads it.
func (r *Record) Game() rollout.TournamentGame {
	return rollout.TournamentGame{ID: r.Match.ID, Condition: r.Match.Condition, Round: r.Match.Round,
		Seats: r.Match.Seats, Failed: r.Failed, Rollout: &r.Rollout}
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

// ReadSpec reads a tournament directory's frozen spec file, as written at
// its first start.
func ReadSpec(dir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, SpecFile))
	if err != nil {
		return nil, fmt.Errorf("tournament.ReadSpec: %w", err)
	}
	return b, nil
}

// Files are the files a tournament's game reads besides its section and
// the curriculum (rollout.Tournament.Files), frozen at the first start.
type Files struct {
	// List holds the files in the game's order; Where says where they
	// came from.
	List  []rollout.File
	Where string
}

// hashes are the files' SHA-256 hashes by name and the hash of the set:
// of one "name hash" line per file, in order ("" when there are none).
func (f Files) hashes() (all string, each map[string]string) {
	each = map[string]string{}
	if len(f.List) == 0 {
		return "", each
	}
	var lines strings.Builder
	for _, file := range f.List {
		each[file.Name] = sha256Hex(file.Data)
		fmt.Fprintf(&lines, "%s %s\n", file.Name, each[file.Name])
	}
	return sha256Hex([]byte(lines.String())), each
}

func sha256Hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// promptsRecord is prompts.json.
type promptsRecord struct {
	SHA256 string            `json:"sha256"`
	Files  map[string]string `json:"files"`
}

// freeze writes the spec (canonical, as the loader rewrites it), the
// game's files and their hashes at the first start, and on a resume checks
// that neither changed: canonical rewrites the frozen spec file as the
// loader would now, for comparing.
func freeze(dir string, spec []byte, canonical func([]byte) ([]byte, error), files Files) error {
	specPath := filepath.Join(dir, SpecFile)
	all, each := files.hashes()
	old, err := os.ReadFile(specPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(filepath.Join(dir, GamesDir), 0o755); err != nil {
			return err
		}
		if len(files.List) > 0 {
			if err := os.MkdirAll(filepath.Join(dir, PromptsDir), 0o755); err != nil {
				return err
			}
		}
		for _, f := range files.List {
			if err := fsutil.WriteFileAtomic(filepath.Join(dir, PromptsDir, f.Name), f.Data, 0o644); err != nil {
				return err
			}
		}
		b, _ := json.MarshalIndent(promptsRecord{SHA256: all, Files: each}, "", "  ")
		if err := fsutil.WriteFileAtomic(filepath.Join(dir, PromptsFile), append(b, '\n'), 0o644); err != nil {
			return err
		}
		// The spec last: a directory with tournament.yaml is complete.
		return fsutil.WriteFileAtomic(specPath, spec, 0o644)
	case err != nil:
		return err
	}
	frozen, err := canonical(old)
	if err != nil {
		return fmt.Errorf("%s: %w", specPath, err)
	}
	now, err := canonical(spec)
	if err != nil {
		return fmt.Errorf("the tournament spec: %w", err)
	}
	if string(frozen) != string(now) {
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
	if pr.SHA256 != all {
		return fmt.Errorf("the prompt files (%s) differ from the ones this tournament started with (%s, hashes in %s)", files.Where, filepath.Join(dir, PromptsDir), PromptsFile)
	}
	return nil
}

// FilesHash is the hash of the game's files a tournament directory froze
// ("" when it froze none or its prompts.json is unreadable).
func FilesHash(dir string) string {
	var pr promptsRecord
	if b, err := os.ReadFile(filepath.Join(dir, PromptsFile)); err == nil {
		_ = json.Unmarshal(b, &pr)
	}
	return pr.SHA256
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
