package games

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/rollout"
)

// SeriesOut is a series output (`parley series --out DIR`): its series,
// each with its games in order.
type SeriesOut struct {
	Name   string      `json:"name"`
	Series []OneSeries `json:"series"`
	Errors []string    `json:"errors"`
}

// OneSeries is one series: its parties (roles) and their names, the
// adversary's role ("" when none is marked), and its games in order.
type OneSeries struct {
	ID        string            `json:"id"`
	Roles     []string          `json:"roles"`
	Names     map[string]string `json:"names"`
	Adversary string            `json:"adversary"`
	Games     []SeriesGame      `json:"games"`
}

// SeriesGame is one game of a series: Trust[i][j] is party i's trust in
// party j after it (the series state the game left, seed 002).
type SeriesGame struct {
	Index    int                           `json:"index"`
	PromptID string                        `json:"prompt_id"`
	Failed   bool                          `json:"failed"`
	Error    string                        `json:"error,omitempty"`
	Agreed   bool                          `json:"agreed"`
	Rounds   int32                         `json:"rounds"`
	Score    float32                       `json:"score"`
	Trust    map[string]map[string]float64 `json:"trust"`
	Summary  map[string]any                `json:"summary"`
	Turns    int                           `json:"turns"`
}

// seriesState is what the viewer reads of a series state: seed 002's
// trust vectors and the parties' names (multiparty/trust.State).
type seriesState struct {
	Names map[string]string             `json:"names"`
	Trust map[string]map[string]float64 `json:"trust"`
}

// ReadSeries reads the series output in dir (its series/ folder).
func ReadSeries(dir string) (*SeriesOut, error) {
	root := filepath.Join(dir, "series")
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("games: %s is not a series output (looked for its series/ folder): %w", dir, err)
	}
	out := &SeriesOut{Name: filepath.Base(filepath.Clean(dir)), Series: []OneSeries{}, Errors: []string{}}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		s, errs := readOneSeries(root, e.Name())
		out.Errors = append(out.Errors, errs...)
		out.Series = append(out.Series, s)
	}
	return out, nil
}

// readOneSeries reads the games of series id under root in order; a
// record that does not parse is named in errs and skipped (the games
// after it are still shown).
func readOneSeries(root, id string) (OneSeries, []string) {
	s := OneSeries{ID: id, Roles: []string{}, Names: map[string]string{}, Games: []SeriesGame{}}
	var errs []string
	entries, err := os.ReadDir(filepath.Join(root, id))
	if err != nil {
		return s, []string{err.Error()}
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "game-") && strings.HasSuffix(n, ".json") && !fsutil.IsTemp(n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	roles := map[string]bool{}
	for _, n := range names {
		path := filepath.Join(root, id, n)
		r, ok := readJSON[rollout.GameRecord](path, &errs)
		if !ok {
			continue
		}
		var st seriesState
		if len(r.State) > 0 {
			if err := json.Unmarshal(r.State, &st); err != nil {
				errs = append(errs, fmt.Sprintf("%s: its state does not parse: %v", path, err))
			}
		}
		g := SeriesGame{Index: r.Index, PromptID: r.Rollout.PromptID, Failed: r.Rollout.Failed, Error: r.Rollout.Error,
			Agreed: r.Rollout.Agreed, Rounds: r.Rollout.Rounds, Score: r.Rollout.Score, Trust: st.Trust,
			Summary: map[string]any{}, Turns: len(r.Rollout.Turns)}
		if g.Trust == nil {
			g.Trust = map[string]map[string]float64{}
		}
		for k, v := range st.Names {
			s.Names[k] = v
		}
		var o struct {
			Kinds map[string]string `json:"kinds"`
			Names map[string]string `json:"names"`
			Deal  *bool             `json:"deal"`
			Label string            `json:"label"`
		}
		if json.Unmarshal([]byte(r.Rollout.Outcome), &o) == nil {
			for role, k := range o.Kinds {
				roles[role] = true
				if k == "adversary" {
					s.Adversary = role
				}
			}
			for k, v := range o.Names {
				if _, ok := s.Names[k]; !ok {
					s.Names[k] = v
				}
			}
			if o.Deal != nil {
				g.Summary["deal"] = *o.Deal
			}
			if o.Label != "" {
				g.Summary["package"] = o.Label
			}
		}
		for i, row := range g.Trust {
			roles[i] = true
			for j := range row {
				roles[j] = true
			}
		}
		s.Games = append(s.Games, g)
	}
	for r := range roles {
		s.Roles = append(s.Roles, r)
	}
	sort.Strings(s.Roles)
	return s, errs
}
