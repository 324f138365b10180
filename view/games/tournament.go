package games

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/league"
	"github.com/parleyhq/parley/rollout"
)

// Matrix is a tournament's seat-0 × seat-1 matrix (seed 001's holder ×
// requester, figure 1): Value[i][j] is the mean score of the games Rows[i]
// played in seat 0 against Cols[j] in seat 1 (seed 001: the share the
// requester got), nil where none was played; Count the games. Rows and
// Cols are sorted as the tournament's report sorts them
// (league.AnalyseCrossPlay: the most robust holder first, the best
// requester first).
type Matrix struct {
	Name   string       `json:"name"`
	Env    string       `json:"env"`
	Agents []string     `json:"agents"`
	Seats  [2]string    `json:"seats"`
	Rows   []string     `json:"rows"`
	Cols   []string     `json:"cols"`
	Value  [][]*float64 `json:"value"`
	Count  [][]int      `json:"count"`
	// Measure says what a cell holds.
	Measure string `json:"measure"`
	Games   int    `json:"games"`
	Failed  int    `json:"failed"`
	// Errors name the records that could not be read (skipped).
	Errors []string `json:"errors"`
}

// cells are the (row, col) pairs with games.
func (m *Matrix) cells() [][2]string {
	var out [][2]string
	for i, r := range m.Rows {
		for j, c := range m.Cols {
			if m.Count[i][j] > 0 {
				out = append(out, [2]string{r, c})
			}
		}
	}
	return out
}

// readRecords reads a tournament's game records like
// tournament.ReadRecords, but a record that does not parse is named in
// errs and skipped, and unfinished (temporary) files are not read.
func readRecords(dir string) (recs []tournament.Record, errs []string, err error) {
	gd := filepath.Join(dir, tournament.GamesDir)
	entries, err := os.ReadDir(gd)
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, fmt.Errorf("games: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".json") || fsutil.IsTemp(name) {
			continue
		}
		path := filepath.Join(gd, name)
		r, ok := readJSON[tournament.Record](path, &errs)
		if !ok {
			continue
		}
		if r.Match.ID+".json" != name {
			errs = append(errs, fmt.Sprintf("%s: skipped, records game %q", path, r.Match.ID))
			continue
		}
		recs = append(recs, r)
	}
	sort.Slice(recs, func(i, j int) bool { return recs[i].Match.ID < recs[j].Match.ID })
	return recs, errs, nil
}

// specOf reads the tournament's frozen spec: its game and agents in spec
// order ("" and nil when it does not parse, e.g. its game is not
// registered in this binary).
func specOf(dir string) (env string, agents []string, err error) {
	b, err := tournament.ReadSpec(dir)
	if err != nil {
		return "", nil, fmt.Errorf("games: %s is not a tournament directory (looked for %s): %w", dir, tournament.SpecFile, err)
	}
	t, err := config.ParseTournament(b)
	if err != nil {
		return "", nil, nil
	}
	return t.Env, t.AgentNames(), nil
}

// value is a game's cell value: its outcome's share when the game records
// one (seed 001, as its analysis reads it), else its headline score; ok
// is false for a failed or unscored game.
func value(r *tournament.Record) (float64, bool) {
	if r.Failed || r.Rollout.Failed {
		return 0, false
	}
	var o struct {
		Share *float64 `json:"share"`
	}
	if json.Unmarshal([]byte(r.Rollout.Outcome), &o) == nil && o.Share != nil {
		return *o.Share, true
	}
	return float64(r.Rollout.Score), r.Rollout.Judged
}

// ReadTournament reads the tournament in dir into its matrix.
func ReadTournament(dir string) (*Matrix, error) {
	env, agents, err := specOf(dir)
	if err != nil {
		return nil, err
	}
	recs, errs, err := readRecords(dir)
	if err != nil {
		return nil, err
	}
	m := matrixOf(recs, env, agents)
	m.Name, m.Errors = filepath.Base(filepath.Clean(dir)), append(errs, m.Errors...)
	return m, nil
}

func matrixOf(recs []tournament.Record, env string, agents []string) *Matrix {
	seen := map[string]bool{}
	for _, a := range agents {
		seen[a] = true
	}
	var games []league.CrossGame
	for i := range recs {
		r := &recs[i]
		if env == "" {
			env = r.Rollout.Env
		}
		for _, a := range r.Match.Seats {
			if !seen[a] {
				seen[a] = true
				agents = append(agents, a)
			}
		}
		v, ok := value(r)
		games = append(games, league.CrossGame{Seats: r.Match.Seats, Score: v, Failed: !ok})
	}
	seats := [2]string{"seat 0", "seat 1"}
	cooperative := false
	if spec, ok := rollout.Lookup(env); ok && spec.Tournament != nil {
		seats, cooperative = spec.Tournament.Seats, spec.Tournament.Cooperative
	}
	if agents == nil {
		agents = []string{}
	}
	cp := league.AnalyseCrossPlay(agents, seats, games, cooperative)
	m := &Matrix{Env: env, Agents: agents, Seats: seats, Rows: cp.Rows, Cols: cp.Cols, Games: cp.Games, Failed: cp.Failed,
		Measure: "mean score of the " + seats[1] + " (seed 001: the share transferred)", Errors: []string{}}
	idx := func(l []string) map[string]int {
		o := map[string]int{}
		for i, a := range l {
			o[a] = i
		}
		return o
	}
	ri, ci := idx(cp.Rows), idx(cp.Cols)
	m.Count = make([][]int, len(cp.Rows))
	m.Value = make([][]*float64, len(cp.Rows))
	for i := range cp.Rows {
		m.Count[i] = make([]int, len(cp.Cols))
		m.Value[i] = make([]*float64, len(cp.Cols))
		for j := range cp.Cols {
			if v := cp.Matrix[i][j]; !math.IsNaN(v) {
				m.Value[i][j] = &v
			}
		}
	}
	for _, g := range games {
		if !g.Failed {
			m.Count[ri[g.Seats[0]]][ci[g.Seats[1]]]++
		}
	}
	return m
}

// Game is one game as a cell's page shows it: its turns, and the ledger
// per turn as the game records it (its outcome's "ledger", e.g. seed 001's
// offers, moves and balances).
type Game struct {
	ID        string                `json:"id"`
	Condition string                `json:"condition,omitempty"`
	Round     int                   `json:"round,omitempty"`
	Seats     [2]string             `json:"seats"`
	Scenario  string                `json:"scenario,omitempty"`
	Failed    bool                  `json:"failed"`
	Error     string                `json:"error,omitempty"`
	Value     *float64              `json:"value"`
	Judge     string                `json:"judge,omitempty"`
	Turns     []dataset.Turn        `json:"turns"`
	Roles     []dataset.RoleOutcome `json:"roles"`
	// Ledger holds the outcome's per-turn entries, as recorded.
	Ledger []json.RawMessage `json:"ledger"`
	// Summary holds the outcome's scalar fields (share, ended, …).
	Summary map[string]any `json:"summary"`
}

// Cell are the games of one matrix cell.
type Cell struct {
	Row    string    `json:"row"`
	Col    string    `json:"col"`
	Seats  [2]string `json:"seats"`
	Games  []Game    `json:"games"`
	Errors []string  `json:"errors"`
}

// ReadCell reads the games agent row played in seat 0 against col in seat
// 1 in the tournament in dir.
func ReadCell(dir, row, col string) (*Cell, error) {
	if row == "" || col == "" {
		return nil, fmt.Errorf("%w: a cell needs row and col (the agents in seat 0 and seat 1)", errBadRequest)
	}
	env, _, err := specOf(dir)
	if err != nil {
		return nil, err
	}
	recs, errs, err := readRecords(dir)
	if err != nil {
		return nil, err
	}
	c := &Cell{Row: row, Col: col, Seats: [2]string{"seat 0", "seat 1"}, Games: []Game{}, Errors: errs}
	if c.Errors == nil {
		c.Errors = []string{}
	}
	if spec, ok := rollout.Lookup(env); ok && spec.Tournament != nil {
		c.Seats = spec.Tournament.Seats
	}
	for i := range recs {
		r := &recs[i]
		if r.Match.Seats != [2]string{row, col} {
			continue
		}
		c.Games = append(c.Games, gameOf(r))
	}
	return c, nil
}

func gameOf(r *tournament.Record) Game {
	g := Game{ID: r.Match.ID, Condition: r.Match.Condition, Round: r.Match.Round, Seats: r.Match.Seats, Scenario: r.Match.Scenario,
		Failed: r.Failed || r.Rollout.Failed, Error: r.Rollout.Error, Judge: r.Rollout.JudgeRationale,
		Turns: r.Rollout.Turns, Roles: r.Rollout.Roles, Ledger: []json.RawMessage{}, Summary: map[string]any{}}
	if g.Error == "" && len(r.Errors) > 0 {
		g.Error = r.Errors[len(r.Errors)-1]
	}
	if v, ok := value(r); ok {
		g.Value = &v
	}
	if g.Turns == nil {
		g.Turns = []dataset.Turn{}
	}
	if g.Roles == nil {
		g.Roles = []dataset.RoleOutcome{}
	}
	var o map[string]json.RawMessage
	if json.Unmarshal([]byte(r.Rollout.Outcome), &o) == nil {
		if l, ok := o["ledger"]; ok {
			_ = json.Unmarshal(l, &g.Ledger)
		}
		for k, v := range o {
			var x any
			if json.Unmarshal(v, &x) != nil {
				continue
			}
			switch x.(type) {
			case float64, string, bool:
				g.Summary[k] = x
			}
		}
	}
	return g
}
