package grpo

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

type fixtureRollout struct {
	ID        string   `json:"id"`
	Group     string   `json:"group"`
	Reward    float64  `json:"reward"`
	Failed    bool     `json:"failed"`
	Judged    bool     `json:"judged"`
	Roles     []string `json:"roles"`
	Kept      bool     `json:"kept"`
	Advantage float64  `json:"advantage"`
}

type fixtureStep struct {
	Rollouts      []fixtureRollout   `json:"rollouts"`
	Stats         *AdvantageStats    `json:"stats"`
	BaselineAfter map[string]float64 `json:"baseline_after"`
}

type fixtureCase struct {
	Name    string `json:"name"`
	Options struct {
		Mode             string  `json:"mode"`
		Epsilon          float64 `json:"epsilon"`
		StdDDOF          int     `json:"std_ddof"`
		KeepZeroVariance bool    `json:"keep_zero_variance"`
		BaselineMomentum float64 `json:"baseline_momentum"`
	} `json:"options"`
	Steps []fixtureStep `json:"steps"`
}

// rollout is the fixture row as a rollout whose listed roles all earn its
// reward (the case of the deliberation game) and are trained.
func (f fixtureRollout) rollout() dataset.Rollout {
	r := roll(f.Group, f.ID, f.Judged, float32(f.Reward), f.Roles...)
	r.Failed = f.Failed
	return r
}

// roll is a rollout of group whose roles (default "A") are trained and,
// when judged, scored with reward; advantages start at 99 (must be reset).
func roll(group, id string, judged bool, reward float32, roles ...string) dataset.Rollout {
	r := dataset.Rollout{RolloutID: id, GroupID: group, Judged: judged}
	if len(roles) == 0 {
		roles = []string{"A"}
	}
	for _, role := range roles {
		r.Sequences = append(r.Sequences, dataset.Sequence{Role: role, Kind: dataset.KindDialogue})
		r.Roles = append(r.Roles, dataset.RoleOutcome{Role: role, Trained: true, Scored: judged, Score: reward, Reward: reward, Advantage: 99})
	}
	return r
}

// adv is a rollout's advantage: its first role's, after checking that all
// its scored roles share it (they share one reward here).
func adv(t *testing.T, r dataset.Rollout) float32 {
	t.Helper()
	if len(r.Roles) == 0 {
		return 0
	}
	for _, ro := range r.Roles[1:] {
		if ro.Advantage != r.Roles[0].Advantage {
			t.Fatalf("rollout %s: roles with one reward got advantages %v and %v", r.RolloutID, r.Roles[0].Advantage, ro.Advantage)
		}
	}
	return r.Roles[0].Advantage
}

// setReward gives every role of r the reward x.
func setReward(r *dataset.Rollout, x float32) {
	for k := range r.Roles {
		r.Roles[k].Reward, r.Roles[k].Score = x, x
	}
}

// rewardOf is r's first role's reward.
func rewardOf(r dataset.Rollout) float32 { return r.Roles[0].Reward }

const tol = 1e-6

func near(a, b float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestComputeAdvantagesFixtures(t *testing.T) {
	b, err := os.ReadFile("testdata/advantages.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []fixtureCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) == 0 {
		t.Fatal("no fixture cases")
	}
	for _, c := range fx.Cases {
		t.Run(c.Name, func(t *testing.T) {
			opts := AdvantageOptions{
				Mode: c.Options.Mode, Epsilon: c.Options.Epsilon, StdDDOF: c.Options.StdDDOF,
				KeepZeroVariance: c.Options.KeepZeroVariance, BaselineMomentum: c.Options.BaselineMomentum,
			}
			baseline := NewRoleBaseline()
			for si, step := range c.Steps {
				rs := make([]dataset.Rollout, len(step.Rollouts))
				for i, f := range step.Rollouts {
					rs[i] = f.rollout()
				}
				kept, st, err := ComputeAdvantages(rs, opts, baseline)
				if err != nil {
					t.Fatalf("step %d: ComputeAdvantages: %v", si, err)
				}
				keptIDs := map[string]float32{}
				for _, k := range kept {
					keptIDs[k.RolloutID] = adv(t, k)
				}
				for i, f := range step.Rollouts {
					if got := float64(adv(t, rs[i])); !near(got, f.Advantage) {
						t.Errorf("step %d: advantage(%q) = %.9f, want %.9f", si, f.ID, got, f.Advantage)
					}
					a, ok := keptIDs[f.ID]
					if ok != f.Kept {
						t.Errorf("step %d: kept(%q) = %v, want %v", si, f.ID, ok, f.Kept)
					}
					if ok && a != adv(t, rs[i]) {
						t.Errorf("step %d: kept copy of %q has advantage %v, in place %v", si, f.ID, a, adv(t, rs[i]))
					}
				}
				if step.Stats != nil {
					checkStats(t, st, *step.Stats)
				}
				for role, want := range step.BaselineAfter {
					if got, ok := baseline.Value(role); !ok || !near(got, want) {
						t.Errorf("step %d: baseline(%q) = %v, %v, want %v", si, role, got, ok, want)
					}
				}
			}
		})
	}
}

func checkStats(t *testing.T, got, want AdvantageStats) {
	t.Helper()
	ints := []struct {
		name      string
		got, want int
	}{
		{"Groups", got.Groups, want.Groups},
		{"KeptGroups", got.KeptGroups, want.KeptGroups},
		{"Kept", got.Kept, want.Kept},
		{"Scored", got.Scored, want.Scored},
		{"Excluded", got.Excluded, want.Excluded},
		{"EmptyGroups", got.EmptyGroups, want.EmptyGroups},
		{"ZeroVarianceGroups", got.ZeroVarianceGroups, want.ZeroVarianceGroups},
		{"DroppedZeroVariance", got.DroppedZeroVariance, want.DroppedZeroVariance},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("stats.%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	floats := []struct {
		name      string
		got, want float64
	}{
		{"RewardMean", got.RewardMean, want.RewardMean},
		{"RewardStd", got.RewardStd, want.RewardStd},
		{"ScoreMin", got.ScoreMin, want.ScoreMin},
		{"ScoreMean", got.ScoreMean, want.ScoreMean},
		{"ScoreMax", got.ScoreMax, want.ScoreMax},
	}
	for _, c := range floats {
		if !near(c.got, c.want) {
			t.Errorf("stats.%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// randomRollouts makes nGroups groups of 1..8 rollouts with rewards in
// [-5, 5], some failed or unjudged, some groups constant.
func randomRollouts(rng *rand.Rand, nGroups int) []dataset.Rollout {
	var rs []dataset.Rollout
	for g := range nGroups {
		size := 1 + rng.IntN(8)
		constant := rng.IntN(6) == 0
		c := float32(math.Round(rng.Float64()*10-5) / 4)
		for i := range size {
			judged := rng.IntN(10) != 0
			failed := rng.IntN(12) == 0
			reward := float32(rng.Float64()*10 - 5)
			if constant {
				reward = c
			}
			r := roll(fmt.Sprintf("g%d", g), fmt.Sprintf("g%d-%d", g, i), judged, reward, "A", "B")
			r.Failed = failed
			rs = append(rs, r)
		}
	}
	return rs
}

func cloneRollouts(rs []dataset.Rollout) []dataset.Rollout {
	out := append([]dataset.Rollout(nil), rs...)
	for i := range out {
		out[i].Roles = slices.Clone(out[i].Roles)
	}
	return out
}

func TestAdvantageProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, mode := range []string{ModeGroup, ModeGroupMean} {
		for _, ddof := range []int{0, 1} {
			for trial := range 200 {
				opts := AdvantageOptions{Mode: mode, StdDDOF: ddof}
				rs := randomRollouts(rng, 1+rng.IntN(6))
				base := cloneRollouts(rs)
				kept, st, err := ComputeAdvantages(base, opts, nil)
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%s/ddof%d/trial%d", mode, ddof, trial)

				// Advantages sum to ~0 in each kept group; all finite.
				sums := map[string]float64{}
				for _, r := range kept {
					a := float64(adv(t, r))
					if math.IsNaN(a) || math.IsInf(a, 0) {
						t.Fatalf("%s: advantage(%q) = %v", name, r.RolloutID, a)
					}
					sums[r.GroupID] += a
				}
				for g, s := range sums {
					if math.Abs(s) > 1e-4 {
						t.Errorf("%s: sum of advantages in %s = %v, want 0", name, g, s)
					}
				}
				if st.Kept != len(kept) || st.Scored+st.Excluded != len(rs) {
					t.Errorf("%s: stats %+v inconsistent with %d rollouts, %d kept", name, st, len(rs), len(kept))
				}

				// A constant shift changes nothing; in group mode neither
				// does a positive scale.
				shift := float32(rng.Float64()*20 - 10)
				scale := float32(0.1 + rng.Float64()*10)
				transforms := []struct {
					name string
					f    func(float32) float32
					ok   bool
				}{
					{"shift", func(r float32) float32 { return r + shift }, true},
					{"scale", func(r float32) float32 { return r * scale }, mode == ModeGroup},
				}
				for _, tr := range transforms {
					if !tr.ok {
						continue
					}
					moved := cloneRollouts(rs)
					for i := range moved {
						setReward(&moved[i], tr.f(rewardOf(moved[i])))
					}
					kept2, _, err := ComputeAdvantages(moved, opts, nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(kept2) != len(kept) {
						t.Errorf("%s: %s kept %d rollouts, unmoved %d", name, tr.name, len(kept2), len(kept))
						continue
					}
					for i := range moved {
						a, b := float64(adv(t, base[i])), float64(adv(t, moved[i]))
						// float32 rewards: allow their rounding, relative to
						// the group's spread.
						if math.Abs(a-b) > 2e-3*math.Max(1, math.Abs(a)) {
							t.Errorf("%s: %s advantage(%q) = %v, unmoved %v", name, tr.name, rs[i].RolloutID, b, a)
						}
					}
				}
			}
		}
	}
}

func TestZeroVarianceAndSingletons(t *testing.T) {
	mk := func(group string, rewards ...float32) []dataset.Rollout {
		var rs []dataset.Rollout
		for i, r := range rewards {
			rs = append(rs, roll(group, fmt.Sprintf("%s-%d", group, i), true, r))
		}
		return rs
	}
	tests := []struct {
		name        string
		rollouts    []dataset.Rollout
		opts        AdvantageOptions
		wantKept    int
		wantZeroVar int
		wantDropped int
	}{
		{"singleton dropped", mk("a", 3), AdvantageOptions{Mode: ModeGroup}, 0, 1, 1},
		{"singleton kept", mk("a", 3), AdvantageOptions{Mode: ModeGroup, KeepZeroVariance: true}, 1, 1, 0},
		{"singleton kept ddof1", mk("a", 3), AdvantageOptions{Mode: ModeGroup, StdDDOF: 1, KeepZeroVariance: true}, 1, 1, 0},
		{"within 1e-9", mk("a", 1, 1+1e-10), AdvantageOptions{Mode: ModeGroup}, 0, 1, 1},
		{"constant kept", mk("a", 2, 2, 2), AdvantageOptions{Mode: ModeGroup, KeepZeroVariance: true}, 3, 1, 0},
		{"constant group_mean", mk("a", 2, 2, 2), AdvantageOptions{Mode: ModeGroupMean}, 0, 1, 1},
		{"role baseline never drops", mk("a", 2, 2), AdvantageOptions{Mode: ModeRoleBaseline}, 2, 1, 0},
	}
	for _, tt := range tests {
		kept, st, err := ComputeAdvantages(tt.rollouts, tt.opts, NewRoleBaseline())
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if len(kept) != tt.wantKept || st.ZeroVarianceGroups != tt.wantZeroVar || st.DroppedZeroVariance != tt.wantDropped {
			t.Errorf("%s: kept %d, zero-variance %d, dropped %d; want %d, %d, %d",
				tt.name, len(kept), st.ZeroVarianceGroups, st.DroppedZeroVariance, tt.wantKept, tt.wantZeroVar, tt.wantDropped)
		}
		for _, r := range kept {
			if a := adv(t, r); a != 0 {
				t.Errorf("%s: advantage(%q) = %v, want 0", tt.name, r.RolloutID, a)
			}
		}
	}
}

func TestExcludedNeverScoredZero(t *testing.T) {
	// A failed rollout with reward 0 must not pull the mean down.
	rs := []dataset.Rollout{
		roll("g", "a", true, 4),
		roll("g", "b", true, 2),
		roll("g", "c", true, 0),
		roll("g", "d", false, 0),
		roll("g", "e", true, float32(math.NaN())),
	}
	rs[2].Failed = true
	kept, st, err := ComputeAdvantages(rs, AdvantageOptions{Mode: ModeGroupMean}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 2 || st.Excluded != 3 || st.RewardMean != 3 {
		t.Fatalf("kept %d, excluded %d, reward mean %v; want 2, 3, 3", len(kept), st.Excluded, st.RewardMean)
	}
	if adv(t, rs[0]) != 1 || adv(t, rs[1]) != -1 {
		t.Errorf("advantages = %v, %v; want 1, -1", adv(t, rs[0]), adv(t, rs[1]))
	}
	for _, r := range rs[2:] {
		if a := r.Roles[0].Advantage; a != 0 {
			t.Errorf("excluded rollout %s: advantage %v, want 0", r.RolloutID, a)
		}
	}
}

func TestAdvantageOptionErrors(t *testing.T) {
	rs := []dataset.Rollout{roll("g", "a", true, 1)}
	tests := []struct {
		name     string
		opts     AdvantageOptions
		baseline *RoleBaseline
		rollouts []dataset.Rollout
		want     string
	}{
		{"empty mode", AdvantageOptions{}, nil, rs, "mode is empty"},
		{"unknown mode", AdvantageOptions{Mode: "grpo"}, nil, rs, `unknown advantage mode "grpo"`},
		{"negative epsilon", AdvantageOptions{Mode: ModeGroup, Epsilon: -1}, nil, rs, "epsilon"},
		{"ddof 2", AdvantageOptions{Mode: ModeGroup, StdDDOF: 2}, nil, rs, "std_ddof"},
		{"momentum 1", AdvantageOptions{Mode: ModeRoleBaseline, BaselineMomentum: 1}, NewRoleBaseline(), rs, "momentum"},
		{"no baseline", AdvantageOptions{Mode: ModeRoleBaseline}, nil, rs, "needs a RoleBaseline"},
		{"no group", AdvantageOptions{Mode: ModeGroup}, nil, []dataset.Rollout{{RolloutID: "x"}}, `rollout "x" has no group_id`},
	}
	for _, tt := range tests {
		_, _, err := ComputeAdvantages(tt.rollouts, tt.opts, tt.baseline)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: ComputeAdvantages() error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}

func TestRoleBaselineJSONRoundTrip(t *testing.T) {
	b := NewRoleBaseline()
	rs := []dataset.Rollout{
		roll("g", "q", true, 0.25, "requester"),
		roll("g", "h", true, 0.75, "holder"),
	}
	opts := AdvantageOptions{Mode: ModeRoleBaseline, BaselineMomentum: 0.9}
	if _, _, err := ComputeAdvantages(cloneRollouts(rs), opts, b); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var back RoleBaseline
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	// The restored baseline must give the same next step as the original.
	next := cloneRollouts(rs)
	setReward(&next[0], 0.5)
	setReward(&next[1], 0.5)
	a1, a2 := cloneRollouts(next), cloneRollouts(next)
	if _, _, err := ComputeAdvantages(a1, opts, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ComputeAdvantages(a2, opts, &back); err != nil {
		t.Fatal(err)
	}
	for i := range a1 {
		if adv(t, a1[i]) != adv(t, a2[i]) {
			t.Errorf("advantage(%q) after JSON round trip = %v, want %v", a1[i].RolloutID, adv(t, a2[i]), adv(t, a1[i]))
		}
	}
	// The requester's baseline was 0.25 and the holder's 0.75.
	if adv(t, a1[0]) != 0.25 || adv(t, a1[1]) != -0.25 {
		t.Errorf("advantages = %v, %v; want 0.25, -0.25", adv(t, a1[0]), adv(t, a1[1]))
	}
	if got, _ := b.Value("requester"); !near(got, 0.9*0.25+0.1*0.5) {
		t.Errorf("baseline(requester) = %v, want %v", got, 0.9*0.25+0.1*0.5)
	}
}

func TestRoleBaselineClone(t *testing.T) {
	b := NewRoleBaseline()
	b.Update("A", 1, 0.9)
	c := b.Clone()
	c.Update("A", 0, 0.5)
	c.Update("B", 2, 0.5)
	if v, _ := b.Value("A"); v != 1 {
		t.Errorf("original Value(A) after updating the clone = %v, want 1", v)
	}
	if _, ok := b.Value("B"); ok {
		t.Error("original has B after updating the clone")
	}
	if v, _ := c.Value("A"); v != 0.5 {
		t.Errorf("clone Value(A) = %v, want 0.5", v)
	}
	if (*RoleBaseline)(nil).Clone() != nil {
		t.Error("nil.Clone() != nil")
	}
}

// TestComputeAdvantagesPerRole checks per-(group, role) advantages against
// hand-computed fixtures: a zero-sum two-role group, a five-role group and
// a group with one untrained role.
func TestComputeAdvantagesPerRole(t *testing.T) {
	b, err := os.ReadFile("testdata/advantages_roles.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Cases []struct {
			Name    string `json:"name"`
			Options struct {
				Mode string `json:"mode"`
			} `json:"options"`
			Rollouts []struct {
				ID     string                `json:"id"`
				Group  string                `json:"group"`
				Failed bool                  `json:"failed"`
				Roles  []dataset.RoleOutcome `json:"roles"`
			} `json:"rollouts"`
			Stats struct {
				Groups     int      `json:"groups"`
				KeptGroups int      `json:"kept_groups"`
				Kept       int      `json:"kept"`
				Scored     int      `json:"scored"`
				Excluded   int      `json:"excluded"`
				RewardMean *float64 `json:"reward_mean"`
			} `json:"stats"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) != 3 {
		t.Fatalf("%d cases, want 3", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var rs []dataset.Rollout
			for _, f := range c.Rollouts {
				r := dataset.Rollout{RolloutID: f.ID, GroupID: f.Group, Failed: f.Failed, Judged: true}
				for _, ro := range f.Roles {
					ro.Advantage = 99 // must be reset
					r.Roles = append(r.Roles, ro)
				}
				rs = append(rs, r)
			}
			kept, st, err := ComputeAdvantages(rs, AdvantageOptions{Mode: c.Options.Mode}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, f := range c.Rollouts {
				for k, want := range f.Roles {
					if got := float64(rs[i].Roles[k].Advantage); !near(got, float64(want.Advantage)) {
						t.Errorf("advantage(%s, %s) = %.9f, want %.9f", f.ID, want.Role, got, want.Advantage)
					}
				}
			}
			if st.Groups != c.Stats.Groups || st.KeptGroups != c.Stats.KeptGroups || st.Kept != c.Stats.Kept ||
				st.Scored != c.Stats.Scored || st.Excluded != c.Stats.Excluded || len(kept) != c.Stats.Kept {
				t.Errorf("stats = %+v (kept %d), want %+v", st, len(kept), c.Stats)
			}
			if c.Stats.RewardMean != nil && !near(st.RewardMean, *c.Stats.RewardMean) {
				t.Errorf("reward mean = %v, want %v (untrained roles must not count)", st.RewardMean, *c.Stats.RewardMean)
			}
		})
	}
	// Zero-sum: the two sides' advantages are exact opposites.
	var rs []dataset.Rollout
	for i, s := range []float32{0.2, 0.6, 0.7} {
		rs = append(rs, dataset.Rollout{RolloutID: fmt.Sprint(i), GroupID: "g", Judged: true, Roles: []dataset.RoleOutcome{
			{Role: "holder", Trained: true, Scored: true, Reward: 1 - s}, {Role: "requester", Trained: true, Scored: true, Reward: s}}})
	}
	if _, _, err := ComputeAdvantages(rs, AdvantageOptions{Mode: ModeGroupMean}, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if h, q := r.Roles[0].Advantage, r.Roles[1].Advantage; math.Abs(float64(h+q)) > 1e-6 {
			t.Errorf("rollout %s: holder %v + requester %v != 0", r.RolloutID, h, q)
		}
	}
}

// TestBuildBatchSkipsUntrainedRoles checks that only trained roles'
// sequences become rows, each with its own role's reward and advantage.
func TestBuildBatchSkipsUntrainedRoles(t *testing.T) {
	seq := func(role string) dataset.Sequence {
		return dataset.Sequence{Role: role, Kind: dataset.KindDialogue, InputIDs: []int32{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float32{0, -1}}
	}
	r := dataset.Rollout{RolloutID: "r", GroupID: "g", Judged: true, PolicyVersion: 1,
		Roles: []dataset.RoleOutcome{
			{Role: "holder", Trained: true, Scored: true, Reward: 0.8, Advantage: 0.3},
			{Role: "requester", Trained: false, Scored: true, Reward: 0.2, Advantage: 0},
		},
		Sequences: []dataset.Sequence{seq("holder"), seq("requester"), seq("holder")},
	}
	rows, st, err := BuildBatch([]dataset.Rollout{r}, BatchOptions{PolicyVersion: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || st.NotTrainedRole != 1 {
		t.Fatalf("rows %d, not trained %d; want 2 holder rows and 1 skipped requester sequence", len(rows), st.NotTrainedRole)
	}
	for _, row := range rows {
		if row.Role != "holder" || row.Reward != 0.8 || row.Advantage != 0.3 || row.Advantages[1] != 0.3 {
			t.Errorf("row %s: role %s reward %v advantage %v, want holder 0.8 0.3", row.SampleID, row.Role, row.Reward, row.Advantage)
		}
	}
}
