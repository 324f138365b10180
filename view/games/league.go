package games

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament"
	"github.com/parleyhq/parley/league"
)

// LeagueOut is a run's league: the newest league file's roles (members
// with their ratings, the trained policy's rating history) and every
// cross-play of the run (RUN/crossplay/step-N), each as its matrix.
type LeagueOut struct {
	Name string `json:"name"`
	// Step is the step of the league file read (0: none).
	Step      int            `json:"step"`
	Roles     []LeagueRole   `json:"roles"`
	CrossPlay []CrossPlayOut `json:"crossplay"`
	Errors    []string       `json:"errors"`
}

// LeagueRole is one league role: its members and the trained policy's
// rating (with RD) over training.
type LeagueRole struct {
	Role    string         `json:"role"`
	Trained Rating         `json:"trained"`
	Members []LeagueMember `json:"members"`
	History []league.Point `json:"history"`
	// MemberHistory is each member's rating (with RD) at every step a
	// league file was kept, by member id.
	MemberHistory map[string][]league.Point `json:"member_history"`
}

// Rating is a Glicko-2 rating and its deviation.
type Rating struct {
	R  float64 `json:"r"`
	RD float64 `json:"rd"`
}

// LeagueMember is one member of a role's league.
type LeagueMember struct {
	ID         string  `json:"id"`
	Kind       string  `json:"kind"`
	Version    int     `json:"version"`
	JoinedStep int     `json:"joined_step"`
	Rating     Rating  `json:"rating"`
	WinProb    float64 `json:"win_prob"`
	Games      int     `json:"games"`
	Drawn      int     `json:"drawn"`
	Skipped    string  `json:"skipped,omitempty"`
}

// CrossPlayOut is one cross-play tournament of the run.
type CrossPlayOut struct {
	Name   string  `json:"name"`
	Matrix *Matrix `json:"matrix"`
}

// ReadLeague reads the league and cross-play of the run in dir.
func ReadLeague(dir string) (*LeagueOut, error) {
	rd := dataset.RunDir(dir)
	out := &LeagueOut{Name: filepath.Base(filepath.Clean(dir)), Roles: []LeagueRole{}, CrossPlay: []CrossPlayOut{}, Errors: []string{}}
	if !isDir(rd.LeagueDir()) && !isDir(filepath.Join(dir, "crossplay")) {
		return nil, fmt.Errorf("games: %s holds no league (looked for %s and %s)", dir, rd.LeagueDir(), filepath.Join(dir, "crossplay"))
	}
	st, step, errs := newestLeague(rd)
	out.Errors = append(out.Errors, errs...)
	if st != nil {
		out.Step = step
		for _, r := range st.Roles {
			lr := LeagueRole{Role: r.Role, Trained: Rating{r.Trained.R, r.Trained.RD}, Members: []LeagueMember{}, History: r.History,
				MemberHistory: memberHistory(rd, r.Role, step)}
			if lr.History == nil {
				lr.History = []league.Point{}
			}
			for _, m := range r.Members {
				lr.Members = append(lr.Members, LeagueMember{ID: m.ID, Kind: m.Kind, Version: m.Version, JoinedStep: m.JoinedStep,
					Rating: Rating{m.Rating.R, m.Rating.RD}, WinProb: m.WinProb, Games: m.Games, Drawn: m.Drawn, Skipped: m.Skipped})
			}
			out.Roles = append(out.Roles, lr)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "crossplay"))
	for _, e := range entries {
		p := filepath.Join(dir, "crossplay", e.Name())
		if !e.IsDir() || !tournament.IsDir(p) {
			continue
		}
		m, err := ReadTournament(p)
		if err != nil {
			out.Errors = append(out.Errors, err.Error())
			continue
		}
		out.Errors = append(out.Errors, m.Errors...)
		out.CrossPlay = append(out.CrossPlay, CrossPlayOut{Name: e.Name(), Matrix: m})
	}
	return out, nil
}

// newestLeague reads the newest league file that parses (a newer one that
// does not is named in errs).
func newestLeague(rd dataset.RunDir) (*league.State, int, []string) {
	entries, _ := os.ReadDir(rd.LeagueDir())
	var steps []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if n, ok := dataset.ParseStepName(name); ok {
			steps = append(steps, n)
		}
	}
	sort.Sort(sort.Reverse(sort.IntSlice(steps)))
	var errs []string
	for _, s := range steps {
		path := rd.LeaguePath(s)
		st, ok := readJSON[league.State](path, &errs)
		if !ok {
			continue
		}
		return &st, s, errs
	}
	return nil, 0, errs
}

// crossPlayDir is the run's cross-play tournament named xp (step-N).
func crossPlayDir(run, xp string) (string, error) {
	if _, ok := dataset.ParseStepName(xp); !ok {
		return "", fmt.Errorf("%w: xp %q is not a cross-play's name (step-N)", errBadRequest, xp)
	}
	p := filepath.Join(run, "crossplay", xp)
	if !tournament.IsDir(p) {
		return "", fmt.Errorf("%w: %s is not a cross-play tournament (looked for %s)", errBadRequest, p, tournament.SpecFile)
	}
	return p, nil
}

// memberHistory reads every league file of the run up to step and
// collects role's members' ratings at each (files that do not parse are
// left out: newestLeague names the newest; older ones only thin the
// lines).
func memberHistory(rd dataset.RunDir, role string, upTo int) map[string][]league.Point {
	out := map[string][]league.Point{}
	entries, _ := os.ReadDir(rd.LeagueDir())
	var steps []int
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			if n, ok := dataset.ParseStepName(name); ok && n <= upTo {
				steps = append(steps, n)
			}
		}
	}
	sort.Ints(steps)
	for _, s := range steps {
		b, err := os.ReadFile(rd.LeaguePath(s))
		if err != nil {
			continue
		}
		var st league.State
		if json.Unmarshal(b, &st) != nil || st.Role(role) == nil {
			continue
		}
		for _, m := range st.Role(role).Members {
			out[m.ID] = append(out[m.ID], league.Point{Step: s, R: m.Rating.R, RD: m.Rating.RD})
		}
	}
	return out
}
