// Package league keeps a league of opponents for one role of a game
// (roles.<role>.policy: league): the frozen agents the config lists plus
// the run's own past policies, a snapshot joining every K steps, rated as
// they play.
//
// A step is one Glicko-2 rating period (stats.Glicko2Update): every game
// of the step between the trained policy and a member updates both from
// their ratings at the step's start; a member not drawn keeps its rating
// and its deviation grows, so a rarely met one becomes uncertain again. A
// snapshot joins with the trained policy's rating and the new-player
// deviation (350): it starts uncertain. Glicko-2 rather than the Elo of
// seed 001's tournament, because a league needs each member's
// uncertainty (a member just joined, one not drawn for long): Elo has none.
//
// Each group draws one member (Draw), seeded by the run's seed, the step
// and the group's index, by a rule: uniform, latest (the newest snapshot),
// or prioritized fictitious self-play (pfsp: weight (1 − p)^power, p the
// trained policy's estimated chance to beat the member, AlphaStar's hard
// opponents first). The state after each step (members, ratings,
// win-probability estimates, draw counts, the adapters loaded for the
// league and their churn) is RUN/league/step-N.json, written atomically
// before the step's batch is final, so a run killed anywhere resumes it
// exactly.
package league

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/league/draw"
	"github.com/parleyhq/parley/stats"
)

// Draw rules (roles.<role>.league.draw), named in package draw so that
// config validates them without importing league.
const (
	DrawUniform = draw.Uniform // every available member alike (the default)
	DrawLatest  = draw.Latest  // the newest snapshot
	DrawPFSP    = draw.PFSP    // by (1 − p)^power, p the win probability against it
)

// DrawRules are the draw rules (draw.Rules).
var DrawRules = draw.Rules

// Defaults of Options.
const (
	DefaultSnapshotEvery = 1
	DefaultPFSPPower     = 2
	DefaultMaxLoaded     = 4
)

// Options configure a role's league (roles.<role>.league).
type Options struct {
	// SnapshotEvery is K: the trained adapter of every step j with
	// j % K == 0 joins (the base model, version 0, too).
	SnapshotEvery int
	// Draw is the draw rule (DrawRules).
	Draw string
	// PFSPPower is pfsp's exponent (default 2).
	PFSPPower float64
	// MaxLoaded bounds the league's adapters loaded at once on the
	// inference server; the least recently drawn beyond it are unloaded.
	MaxLoaded int
	// Tau is Glicko-2's system constant (default stats.Glicko2Tau).
	Tau float64
}

// WithDefaults fills o's zero fields.
func (o Options) WithDefaults() Options {
	if o.SnapshotEvery <= 0 {
		o.SnapshotEvery = DefaultSnapshotEvery
	}
	if o.Draw == "" {
		o.Draw = DrawUniform
	}
	if o.PFSPPower == 0 {
		o.PFSPPower = DefaultPFSPPower
	}
	if o.MaxLoaded <= 0 {
		o.MaxLoaded = DefaultMaxLoaded
	}
	if o.Tau <= 0 {
		o.Tau = stats.Glicko2Tau
	}
	return o
}

// Member kinds.
const (
	KindFrozen   = "frozen"
	KindSnapshot = "snapshot"
)

// Member is one opponent of the league.
type Member struct {
	// ID names the member: "pool[i]" for the config's i-th frozen agent,
	// SnapshotID(j) for the policy of step j.
	ID   string `json:"id"`
	Kind string `json:"kind"`
	// Version is a snapshot's policy version (0: the base model).
	Version int `json:"version"`
	// Model is a snapshot's adapter name ("" for the base model and the
	// frozen members); Path its folder.
	Model string `json:"model,omitempty"`
	Path  string `json:"path,omitempty"`
	// JoinedStep is the step whose draw first held the member.
	JoinedStep int                 `json:"joined_step"`
	Rating     stats.Glicko2Rating `json:"rating"`
	// WinProb is the trained policy's estimated chance to beat the member
	// (stats.Glicko2Expected), after the step.
	WinProb float64 `json:"win_prob"`
	// Drawn and Games count the groups that drew the member and the games
	// rated against it, over the run; StepDrawn those of this step.
	Drawn     int `json:"drawn"`
	Games     int `json:"games"`
	StepDrawn int `json:"step_drawn"`
	// Skipped says why the member was out of this step's draw (its
	// adapter folder gone, its adapter failing to load), "" when it was in.
	Skipped string `json:"skipped,omitempty"`
}

// SnapshotID is the member ID of the policy of version j.
func SnapshotID(j int) string { return fmt.Sprintf("snapshot-%06d", j) }

// FrozenID is the member ID of the config's i-th frozen agent (pool[i]).
func FrozenID(i int) string { return fmt.Sprintf("pool[%d]", i) }

// Slot is an adapter loaded on the inference server for the league.
type Slot struct {
	Model string `json:"model"`
	// LastStep is the last step that drew it.
	LastStep int `json:"last_step"`
}

// Point is the trained policy's rating after a step.
type Point struct {
	Step          int     `json:"step"`
	PolicyVersion int     `json:"policy_version"`
	R             float64 `json:"r"`
	RD            float64 `json:"rd"`
}

// Role is the league of one role.
type Role struct {
	Role string `json:"role"`
	// Trained is the trained policy's rating (its current version).
	Trained stats.Glicko2Rating `json:"trained"`
	Members []Member            `json:"members"`
	// Loaded are the league's adapters loaded now, least recently drawn
	// first.
	Loaded []Slot `json:"loaded"`
	// Loads and Unloads are this step's adapter loads and unloads (the
	// churn); LoadsTotal and UnloadsTotal the run's.
	Loads        int `json:"loads"`
	Unloads      int `json:"unloads"`
	LoadsTotal   int `json:"loads_total"`
	UnloadsTotal int `json:"unloads_total"`
	// History is the trained policy's rating after every step.
	History []Point `json:"history"`
}

// StateVersion is the version of the league files Save writes.
const StateVersion = 1

// State is the league after a step: RUN/league/step-N.json.
type State struct {
	Version int    `json:"version"`
	RunID   string `json:"run_id"`
	Step    int    `json:"step"`
	// Roles are the leagues, by role name.
	Roles []*Role `json:"roles"`
}

// New is the league state of a run before its first step.
func New(runID string, roles []string) *State {
	s := &State{Version: StateVersion, RunID: runID}
	for _, r := range slices.Sorted(slices.Values(roles)) {
		s.Roles = append(s.Roles, &Role{Role: r, Trained: stats.NewGlicko2()})
	}
	return s
}

// Clone is a deep copy of s.
func (s *State) Clone() *State {
	b, _ := json.Marshal(s)
	var out State
	_ = json.Unmarshal(b, &out)
	return &out
}

// Role is the league of role, or nil.
func (s *State) Role(role string) *Role {
	for _, r := range s.Roles {
		if r.Role == role {
			return r
		}
	}
	return nil
}

// Member is the member id, or nil.
func (r *Role) Member(id string) *Member {
	for i := range r.Members {
		if r.Members[i].ID == id {
			return &r.Members[i]
		}
	}
	return nil
}

// Save writes s to path atomically.
func Save(path string, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("league.Save: %w", err)
	}
	f, err := fsutil.MkdirCreate(path, 0o644)
	if err != nil {
		return fmt.Errorf("league.Save: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Abort()
		return fmt.Errorf("league.Save: %w", err)
	}
	crashpoint.Hit("league-write") // written, not yet in place
	if err := f.Commit(); err != nil {
		return fmt.Errorf("league.Save: %w", err)
	}
	return nil
}

// Load reads a league file written by run runID. A missing file is (nil,
// false, nil); a file that does not parse, of another version or written
// by another run is an error naming the file.
func Load(path, runID string) (*State, bool, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("league.Load: %w", err)
	}
	var s State
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, false, fmt.Errorf("league.Load: %s does not parse: %w", path, err)
	}
	if s.Version != StateVersion {
		return nil, false, fmt.Errorf("league.Load: %s: version %d, this build reads %d", path, s.Version, StateVersion)
	}
	if s.RunID != runID {
		return nil, false, fmt.Errorf("league.Load: %s holds the ratings of run %q, not of this run %q: remove %s or train in another run directory",
			path, s.RunID, runID, filepath.Dir(path))
	}
	return &s, true, nil
}

// LoadBefore returns the league after the newest step before step that
// dir holds (league/step-N.json, N < step), or a new league of roles when
// none does. A league file of a step whose batch is final is the state
// after it; the resumed run continues from it.
func LoadBefore(dir dataset.RunDir, runID string, step int, roles []string) (*State, error) {
	entries, err := os.ReadDir(dir.LeagueDir())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("league.LoadBefore: %w", err)
	}
	best := 0
	for _, e := range entries {
		name := e.Name()
		if filepath.Ext(name) != ".json" {
			continue
		}
		if n, ok := dataset.ParseStepName(name[:len(name)-len(".json")]); ok && n < step && n > best {
			best = n
		}
	}
	if best == 0 {
		return New(runID, roles), nil
	}
	s, _, err := Load(dir.LeaguePath(best), runID)
	if err != nil {
		return nil, err
	}
	for _, r := range roles {
		if s.Role(r) == nil {
			s.Roles = append(s.Roles, &Role{Role: r, Trained: stats.NewGlicko2()})
		}
	}
	sort.Slice(s.Roles, func(i, j int) bool { return s.Roles[i].Role < s.Roles[j].Role })
	return s, nil
}

// Join adds the members the league of step holds that it does not yet:
// the frozen ones (frozen[i] is pool[i]'s model label) and the snapshots
// of versions 0, K, 2K, … up to policyVersion. Every member's Skipped and
// StepDrawn, and the role's churn, are reset for the step.
func (r *Role) Join(step, policyVersion, nFrozen int, o Options) {
	o = o.WithDefaults()
	r.Loads, r.Unloads = 0, 0
	for i := range r.Members {
		r.Members[i].Skipped, r.Members[i].StepDrawn = "", 0
	}
	for i := 0; i < nFrozen; i++ {
		if r.Member(FrozenID(i)) == nil {
			r.Members = append(r.Members, Member{ID: FrozenID(i), Kind: KindFrozen, JoinedStep: step, Rating: stats.NewGlicko2()})
		}
	}
	for j := 0; j <= policyVersion; j += o.SnapshotEvery {
		if r.Member(SnapshotID(j)) != nil {
			continue
		}
		rating := stats.NewGlicko2()
		if j > 0 {
			rating.R = r.Trained.R // as strong as the policy it was, but uncertain
		}
		r.Members = append(r.Members, Member{ID: SnapshotID(j), Kind: KindSnapshot, Version: j, JoinedStep: step, Rating: rating})
	}
	for i := range r.Members {
		r.Members[i].WinProb = stats.Glicko2Expected(r.Trained, r.Members[i].Rating)
	}
}

// Available are the members in the step's draw (not skipped).
func (r *Role) Available() []*Member {
	var out []*Member
	for i := range r.Members {
		if r.Members[i].Skipped == "" {
			out = append(out, &r.Members[i])
		}
	}
	return out
}

// Weights are the draw weights of the available members under rule (in
// Available's order), summing to 1; nil when none is available.
func (r *Role) Weights(o Options) []float64 {
	o = o.WithDefaults()
	avail := r.Available()
	if len(avail) == 0 {
		return nil
	}
	w := make([]float64, len(avail))
	switch o.Draw {
	case DrawLatest:
		newest := -1
		for i, m := range avail {
			if m.Kind == KindSnapshot && (newest < 0 || m.Version > avail[newest].Version) {
				newest = i
			}
		}
		if newest >= 0 {
			w[newest] = 1
			return w
		}
		fallthrough
	case DrawUniform:
		for i := range w {
			w[i] = 1
		}
	case DrawPFSP:
		for i, m := range avail {
			w[i] = math.Pow(1-m.WinProb, o.PFSPPower)
		}
	}
	var sum float64
	for _, x := range w {
		sum += x
	}
	if sum <= 0 {
		for i := range w {
			w[i] = 1
		}
		sum = float64(len(w))
	}
	for i := range w {
		w[i] /= sum
	}
	return w
}

// Draw returns the member each of groups groups of step draws: seeded by
// seed, the role, the step and the group index, so a resumed step draws
// the same. It fails when no member is available.
func (r *Role) Draw(o Options, seed int64, step, groups int) ([]string, error) {
	w := r.Weights(o)
	if w == nil {
		return nil, fmt.Errorf("league: role %s: no member can play step %d (%s)", r.Role, step, r.skippedList())
	}
	avail := r.Available()
	out := make([]string, groups)
	for g := range out {
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(step)<<20^uint64(g)^roleHash(r.Role)))
		u := rng.Float64()
		k := 0
		for acc := w[0]; u >= acc && k < len(w)-1; {
			k++
			acc += w[k]
		}
		out[g] = avail[k].ID
	}
	return out, nil
}

// Count records draws (one member ID per group) in the members' counts.
func (r *Role) Count(draws []string) {
	for _, id := range draws {
		if m := r.Member(id); m != nil {
			m.StepDrawn++
			m.Drawn++
		}
	}
}

func (r *Role) skippedList() string {
	var b bytes.Buffer
	for _, m := range r.Members {
		if m.Skipped != "" {
			fmt.Fprintf(&b, "%s: %s; ", m.ID, m.Skipped)
		}
	}
	if b.Len() == 0 {
		return "the league has no members"
	}
	return b.String()[:b.Len()-2]
}

// roleHash separates the draws of two league roles of one run.
func roleHash(role string) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < len(role); i++ {
		h = (h ^ uint64(role[i])) * 1099511628211
	}
	return h
}

// Game is one rated game of a step: the trained policy against member
// Member, Score the trained policy's result (1 a win, ½ a draw, 0 a loss,
// or a graded value in [0, 1]).
type Game struct {
	Member string
	Score  float64
}

// Rate ends step's rating period: the trained policy and every member
// drawn are updated from the games (the ratings at the step's start on
// both sides), the others' deviations grow, and every member's win
// probability is estimated again. The trained policy's rating joins
// History at policyVersion.
func (r *Role) Rate(step, policyVersion int, games []Game, o Options) {
	o = o.WithDefaults()
	start := map[string]stats.Glicko2Rating{}
	for _, m := range r.Members {
		start[m.ID] = m.Rating
	}
	trainedStart := r.Trained
	var tg []stats.Glicko2Game
	mg := map[string][]stats.Glicko2Game{}
	for _, g := range games {
		opp, ok := start[g.Member]
		if !ok {
			continue
		}
		tg = append(tg, stats.Glicko2Game{Opponent: opp, Score: g.Score})
		mg[g.Member] = append(mg[g.Member], stats.Glicko2Game{Opponent: trainedStart, Score: 1 - g.Score})
	}
	r.Trained = stats.Glicko2Update(trainedStart, tg, o.Tau)
	for i := range r.Members {
		m := &r.Members[i]
		m.Rating = stats.Glicko2Update(m.Rating, mg[m.ID], o.Tau)
		m.Games += len(mg[m.ID])
	}
	for i := range r.Members {
		r.Members[i].WinProb = stats.Glicko2Expected(r.Trained, r.Members[i].Rating)
	}
	r.History = append(r.History, Point{Step: step, PolicyVersion: policyVersion, R: r.Trained.R, RD: r.Trained.RD})
}
