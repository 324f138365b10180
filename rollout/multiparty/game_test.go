package multiparty_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// fixedSet loads the committed 2HB+2G scenarios as prompt rows.
func fixedSet(t testing.TB, typ string) []dataset.Prompt {
	t.Helper()
	set, err := scenario.LoadSet(dataset.BuiltinPrefix + typ)
	if err != nil {
		t.Fatal(err)
	}
	var out []dataset.Prompt
	for _, s := range set {
		p, err := scenario.ToPrompt(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// fakeAgents answers every turn with fn(role, round, ask, attempt), where
// round is the last round the role was told of, ask "propose", "vote",
// "retry" or "assess", and keeps every view it was given.
type fakeAgents struct {
	mu    sync.Mutex
	fn    func(role string, round int, ask string) string
	round map[string]int
	views map[string][]llm.Message
	calls int
}

var roundRE = regexp.MustCompile(`Round ([0-9]+) of`)

func (f *fakeAgents) Turn(_ context.Context, role string, msgs []llm.Message, _ rollout.TurnOptions) (rollout.Reply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.round == nil {
		f.round, f.views = map[string]int{}, map[string][]llm.Message{}
	}
	f.views[role] = append([]llm.Message(nil), msgs...)
	last := msgs[len(msgs)-1].Content
	if m := roundRE.FindAllStringSubmatch(last, -1); m != nil {
		f.round[role], _ = strconv.Atoi(m[len(m)-1][1])
	}
	ask := "vote"
	switch {
	case strings.HasPrefix(last, "Your reply could not be read"):
		ask = "retry"
	case strings.Contains(last, "Your turn: propose"):
		ask = "propose"
	case strings.Contains(last, "Your turn: assess"):
		ask = "assess"
	}
	text := f.fn(role, f.round[role], ask)
	return rollout.Reply{Text: text, Raw: text, Tokens: len(strings.Fields(text)), FinishReason: "stop"}, nil
}

// play plays one game of prompt p with cfg and agents, from state.
func play(t *testing.T, cfg *multiparty.Config, p dataset.Prompt, ag rollout.Agents, state []byte) (*dataset.Rollout, *multiparty.Outcome, []byte) {
	return playSeed(t, cfg, p, ag, state, 11)
}

func playSeed(t *testing.T, cfg *multiparty.Config, p dataset.Prompt, ag rollout.Agents, state []byte, seed int64) (*dataset.Rollout, *multiparty.Outcome, []byte) {
	t.Helper()
	g := multiparty.New(*cfg, 64)
	rec := &dataset.Rollout{RolloutID: "r1", Seed: seed, Env: multiparty.Name}
	for _, r := range g.Roles(p) {
		rec.Roles = append(rec.Roles, dataset.RoleOutcome{Role: r, Policy: dataset.PolicyTrained, Trained: true})
	}
	next, err := g.PlayState(context.Background(), p, ag, rec, state)
	if err != nil {
		t.Fatal(err)
	}
	o, err := multiparty.ParseOutcome(rec)
	if err != nil {
		t.Fatal(err)
	}
	return rec, o, next
}

// voteCase is one game of TestVoteCounting.
type voteCase struct {
	name     string
	needed   int
	rounds   int
	behave   func(role string, round int, ask string) string
	deal     bool
	dealAt   int
	yes      []int // yes votes per round
	votes    map[string]string
	mal, abs map[string]int
}

// TestVoteCounting plays scripted games that exercise the deal rule: a
// package passes with votes_needed yes votes (the proposer's counting), a
// NO or an abstention does not count, an unreadable move is asked again
// once and then counted as an abstention, and a proposer without a
// readable proposal loses its round.
func TestVoteCounting(t *testing.T) {
	p := fixedSet(t, scenario.Type2HB2G)[0]
	roles := multiparty.New(*multiparty.DefaultConfig(), 0).Roles(p)
	order := multiparty.TurnOrder(11, roles) // rec.Seed of play
	v := order[1:]                           // round 1's voters, in order
	const prop = "Here is a package.\nPROPOSAL: A1 B2 C3 D4 E1"
	tests := []voteCase{
		{
			name: "four of five pass", needed: 4, rounds: 3,
			behave: func(role string, _ int, ask string) string {
				if ask == "propose" {
					return prop
				}
				if role == v[3] {
					return "No.\nVOTE: NO"
				}
				return "Yes.\nVOTE: YES"
			},
			deal: true, dealAt: 1, yes: []int{4},
			votes: map[string]string{order[0]: "yes", v[0]: "yes", v[1]: "yes", v[2]: "yes", v[3]: "no"},
		},
		{
			name: "three of five fail every round", needed: 4, rounds: 2,
			behave: func(role string, _ int, ask string) string {
				if ask == "propose" {
					return prop
				}
				if role == order[2] || role == order[3] {
					return "VOTE: NO" // two parties who propose in neither round
				}
				return "VOTE: YES"
			},
			deal: false, yes: []int{3, 3},
		},
		{
			name: "an abstention is not a yes", needed: 4, rounds: 1,
			behave: func(role string, _ int, ask string) string {
				switch {
				case ask == "propose":
					return prop
				case role == v[0]:
					return "I vote in favour." // no VOTE line, twice
				case role == v[1]:
					return "VOTE: NO"
				}
				return "VOTE: YES"
			},
			deal: false, yes: []int{3},
			votes: map[string]string{order[0]: "yes", v[0]: "abstain", v[1]: "no", v[2]: "yes", v[3]: "yes"},
			mal:   map[string]int{v[0]: 2}, abs: map[string]int{v[0]: 1},
		},
		{
			name: "asked again once, then read", needed: 4, rounds: 1,
			behave: func(role string, _ int, ask string) string {
				switch {
				case ask == "propose":
					return prop
				case role == v[0] && ask == "retry":
					return "Sorry.\nVOTE: YES"
				case role == v[0]:
					return "VOTE: PERHAPS"
				case role == v[1]:
					return "VOTE: NO"
				}
				return "VOTE: YES"
			},
			deal: true, dealAt: 1, yes: []int{4},
			votes: map[string]string{order[0]: "yes", v[0]: "yes", v[1]: "no", v[2]: "yes", v[3]: "yes"},
			mal:   map[string]int{v[0]: 1},
		},
		{
			name: "no readable proposal loses the round", needed: 4, rounds: 3,
			behave: func(role string, round int, ask string) string {
				switch {
				case (ask == "propose" || ask == "retry") && round == 1:
					return "PROPOSAL: A1 B2 C3 D4" // no option for E
				case ask == "propose":
					return prop
				}
				return "VOTE: YES"
			},
			deal: true, dealAt: 2, yes: []int{0, 5},
			mal: map[string]int{order[0]: 2}, abs: map[string]int{order[0]: 1},
		},
		{
			name: "unanimity needs five", needed: 5, rounds: 1,
			behave: func(role string, _ int, ask string) string {
				if ask == "propose" {
					return prop
				}
				if role == v[2] {
					return "VOTE: NO"
				}
				return "VOTE: YES"
			},
			deal: false, yes: []int{4},
		},
	}
	tests = append(tests, voteCase{
		name: "lenient votes read cooperative words", needed: 4, rounds: 1,
		behave: func(role string, _ int, ask string) string {
			switch {
			case ask == "propose":
				return prop
			case role == v[0]:
				return "we both gain" // YES
			case role == v[1]:
				return "hmm" // NO, and never malformed
			}
			return "VOTE: YES"
		},
		deal: true, dealAt: 1, yes: []int{4},
		votes: map[string]string{order[0]: "yes", v[0]: "yes", v[1]: "no", v[2]: "yes", v[3]: "yes"},
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := multiparty.DefaultConfig()
			cfg.VotesNeeded, cfg.MaxRounds = tt.needed, tt.rounds
			cfg.LenientVotes = strings.HasPrefix(tt.name, "lenient")
			cfg.Trust.Condition = trust.CondNone
			rec, o, _ := play(t, cfg, p, &fakeAgents{fn: tt.behave}, nil)
			if o.Deal != tt.deal || rec.Agreed != tt.deal || o.DealRound != tt.dealAt {
				t.Errorf("deal %v in round %d, want %v in %d", o.Deal, o.DealRound, tt.deal, tt.dealAt)
			}
			var yes []int
			for _, rd := range o.Rounds {
				yes = append(yes, rd.Yes)
				if rd.Passed != (rd.Yes >= tt.needed) {
					t.Errorf("round %d: %d yes, passed %v", rd.Round, rd.Yes, rd.Passed)
				}
			}
			if fmt.Sprint(yes) != fmt.Sprint(tt.yes) {
				t.Errorf("yes votes per round %v, want %v", yes, tt.yes)
			}
			if tt.votes != nil && fmt.Sprint(o.Rounds[0].Votes) != fmt.Sprint(tt.votes) {
				t.Errorf("round 1 votes %v, want %v", o.Rounds[0].Votes, tt.votes)
			}
			if fmt.Sprint(o.Malformed) != fmt.Sprint(nilMap(tt.mal)) || fmt.Sprint(o.Abstained) != fmt.Sprint(nilMap(tt.abs)) {
				t.Errorf("malformed %v abstained %v, want %v %v", o.Malformed, o.Abstained, tt.mal, tt.abs)
			}
			if tt.deal {
				s, _ := scenario.FromPrompt(p)
				for i, party := range s.Parties {
					if got := o.Utility[party.Role]; got != s.Utility(i, o.Package) {
						t.Errorf("utility of %s = %d, want %d", party.Role, got, s.Utility(i, o.Package))
					}
				}
			}
		})
	}
}

func nilMap(m map[string]int) map[string]int {
	if m == nil {
		return map[string]int{}
	}
	return m
}

// TestViewsArePrivate: every party's view holds its own score table and
// BATNA and no other party's; public messages never carry scores.
func TestViewsArePrivate(t *testing.T) {
	p := fixedSet(t, scenario.Type2HB2G)[3]
	s, _ := scenario.FromPrompt(p)
	cfg := multiparty.DefaultConfig()
	cfg.MaxRounds = 2
	cfg.Trust = trust.Settings{Method: trust.MethodFreeForm, Condition: trust.CondSP, Lambda: 0.7, Gamma: 0.9, Prior: 0.5}
	ag := &fakeAgents{fn: func(_ string, _ int, ask string) string {
		if ask == "propose" {
			return "PROPOSAL: A1 B1 C1 D1 E1"
		}
		return "VOTE: NO"
	}}
	play(t, cfg, p, ag, nil)
	tableLine := func(q scenario.Party) string {
		var parts []string
		for k, v := range q.Scores[0] {
			parts = append(parts, fmt.Sprintf("A%d = %d", k+1, v))
		}
		return "Issue A: " + strings.Join(parts, ", ")
	}
	for _, party := range s.Parties {
		view := ag.views[party.Role]
		if len(view) < 3 || view[0].Role != "system" {
			t.Fatalf("%s: view %v", party.Role, view)
		}
		if !strings.Contains(view[0].Content, tableLine(party)) || !strings.Contains(view[0].Content, fmt.Sprintf("negotiated agreement): %d.", party.BATNA)) {
			t.Errorf("%s's system message lacks its own scores or BATNA", party.Role)
		}
		for _, q := range s.Parties {
			if q.Role != party.Role && tableLine(q) != tableLine(party) && strings.Contains(view[0].Content, tableLine(q)) {
				t.Errorf("%s's view holds %s's scores", party.Role, q.Role)
			}
		}
		for _, m := range view[1:] {
			if strings.Contains(m.Content, "Your private scores") || strings.Contains(m.Content, "Issue A: A1 = ") {
				t.Errorf("%s: a %s message carries a score table", party.Role, m.Role)
			}
		}
	}
}

// TestBadScenariosNeverPlayed: a prompt whose scenario is bad fails the
// runner's validation with an error naming the problem, before any request.
func TestBadScenariosNeverPlayed(t *testing.T) {
	good := fixedSet(t, scenario.Type2HB2G)[0]
	s0, _ := scenario.FromPrompt(good)
	breakIt := map[string]func(s *scenario.Scenario){
		"no feasible package": func(s *scenario.Scenario) {
			for i := range s.Parties {
				if s.Parties[i].Honest() {
					s.Parties[i].BATNA = s.MaxUtility(i) - 1
				}
			}
		},
		"malformed score table": func(s *scenario.Scenario) { s.Parties[2].Scores[4] = []int{1, 2} },
		"above every package":   func(s *scenario.Scenario) { s.Parties[0].BATNA = 101 },
		"duplicate party":       func(s *scenario.Scenario) { s.Parties[3].Role = s.Parties[2].Role },
	}
	for want, mutate := range breakIt {
		b, _ := json.Marshal(s0)
		var s scenario.Scenario
		_ = json.Unmarshal(b, &s)
		mutate(&s)
		raw, _ := json.Marshal(&s)
		p := good
		p.Scenario = string(raw)
		pol := &countingPolicy{}
		r, err := rollout.NewRunner(rollout.RunnerOptions{Game: multiparty.New(*multiparty.DefaultConfig(), 0), Policy: pol, GroupSize: 2})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Run(context.Background(), []dataset.Prompt{p}, func(*dataset.Rollout) error { return nil })
		if err == nil || !strings.Contains(err.Error(), strings.Split(want, " ")[0]) {
			t.Errorf("%s: Run = %v, want an error naming it", want, err)
		}
		if pol.calls != 0 {
			t.Errorf("%s: %d requests were made", want, pol.calls)
		}
		_, err = rollout.RunSeries(context.Background(), rollout.RunnerOptions{Game: multiparty.New(*multiparty.DefaultConfig(), 0), Policy: pol},
			t.TempDir(), []rollout.Series{{ID: "s", Games: []dataset.Prompt{good, p}}})
		if err == nil || pol.calls != 0 {
			t.Errorf("%s: RunSeries = %v after %d requests, want an error before any", want, err, pol.calls)
		}
	}
}

type countingPolicy struct{ calls int }

func (c *countingPolicy) Tokenize(context.Context, llm.TokenizeRequest) (llm.TokenizeResult, error) {
	c.calls++
	return llm.TokenizeResult{}, errors.New("no")
}

func (c *countingPolicy) Complete(context.Context, llm.CompletionRequest) ([]llm.Completion, error) {
	c.calls++
	return nil, errors.New("no")
}

// TestAdversaryNeverTrained: even when the trained policy plays it, the
// adversary's role is marked untrained, gets no score and no batch rows;
// scripted roles are recorded as scripted.
func TestAdversaryNeverTrained(t *testing.T) {
	p := fixedSet(t, scenario.Type2HB2G)[1]
	cfg := multiparty.DefaultConfig()
	cfg.MaxRounds = 2
	cfg.Scripted = []string{"hb2"}
	ag := &fakeAgents{fn: func(_ string, _ int, ask string) string {
		if ask == "propose" {
			return "PROPOSAL: A1 B1 C1 D1 E1"
		}
		return "VOTE: YES"
	}}
	rec, o, _ := play(t, cfg, p, ag, nil)
	if ag.views["hb2"] != nil {
		t.Error("the scripted role hb2 was asked through Agents")
	}
	for _, ro := range rec.Roles {
		switch ro.Role {
		case "adversary":
			if ro.Trained {
				t.Error("the adversary is marked trained")
			}
		case "hb2":
			if ro.Trained || ro.Policy != dataset.PolicyScripted {
				t.Errorf("hb2: %+v, want scripted and untrained", ro)
			}
		default:
			if !ro.Trained {
				t.Errorf("%s: untrained", ro.Role)
			}
		}
	}
	res, err := multiparty.NewScorer(10, multiparty.RewardOwn).Judge(context.Background(), rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.Roles["adversary"]; ok || len(res.Roles) != 4 {
		t.Errorf("scored roles %v, want the four honest ones", res.Roles)
	}
	if !o.Deal {
		t.Fatal("everyone voted yes: want a deal")
	}
	// A batch of two such rollouts (rewards differ by a penalty) has rows
	// for trained honest roles only.
	rec.Sequences = nil
	for _, role := range []string{"hb1", "g1", "adversary"} {
		rec.Sequences = append(rec.Sequences, dataset.Sequence{Role: role, Kind: dataset.KindDialogue, InputIDs: []int32{1, 2}, LossMask: []int8{0, 1}, Logprobs: []float32{0, -1}})
	}
	a, b := *rec, *rec
	a.GroupID, b.GroupID, a.RolloutID, b.RolloutID = "g", "g", "a", "b"
	rs := []dataset.Rollout{a, b}
	for i := range rs {
		rs[i].Roles = append([]dataset.RoleOutcome(nil), rec.Roles...)
		for k := range rs[i].Roles {
			ro := &rs[i].Roles[k]
			if v, ok := res.Roles[ro.Role]; ok {
				ro.Scored, ro.Reward = true, float32(v)+float32(i)
			}
		}
	}
	kept, _, err := grpo.ComputeAdvantages(rs, grpo.AdvantageOptions{Mode: grpo.ModeGroup}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := grpo.BuildBatch(kept, grpo.BatchOptions{Step: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Role == "adversary" || r.Role == "hb2" {
			t.Errorf("a batch row for %s", r.Role)
		}
	}
	if len(rows) != 4 {
		t.Errorf("%d rows, want 4 (hb1 and g1 of two rollouts)", len(rows))
	}
}

// TestTrustUpdatesInGame checks the update after a played game by hand.
func TestTrustUpdatesInGame(t *testing.T) {
	p := fixedSet(t, scenario.Type2HB2G)[0]
	roles := multiparty.New(*multiparty.DefaultConfig(), 0).Roles(p)
	seed := int64(1)
	for multiparty.TurnOrder(seed, roles)[0] == "adversary" {
		seed++ // the first proposer must be honest
	}
	order := multiparty.TurnOrder(seed, roles)
	everyoneYesButAdversary := func(role string, _ int, ask string) string {
		switch {
		case ask == "propose":
			return "PROPOSAL: A1 B2 C3 D4 E1"
		case role == "adversary":
			return "VOTE: NO"
		}
		return "VOTE: YES"
	}
	// BRS: the deal passes in round 1 (4 of 5). Every honest voter voted
	// yes and saw the adversary vote no: one negative observation, none
	// positive, so E = (0+1)/(0+1+2) = 1/3 after γ·0.
	cfg := multiparty.DefaultConfig()
	cfg.Trust = trust.Settings{Method: trust.MethodBRS, Condition: trust.CondS, Gamma: 0.9, Lambda: 0.7, Prior: 0.5}
	_, o, next := playSeed(t, cfg, p, &fakeAgents{fn: everyoneYesButAdversary}, nil, seed)
	for _, r := range roles {
		if r == "adversary" || r == order[0] {
			continue
		}
		if got := o.TrustAfter[r]["adversary"]; math.Abs(got-1.0/3) > 1e-12 {
			t.Errorf("BRS: %s's trust in the adversary %v, want 1/3", r, got)
		}
	}
	voter := order[1]
	if voter == "adversary" {
		voter = order[2]
	}
	st, err := trust.ParseState(next)
	if err != nil || st.Games != 1 || math.Abs(st.Trust[voter]["adversary"]-1.0/3) > 1e-12 {
		t.Errorf("state after the game: %+v %v", st, err)
	}
	// Free-form: everyone rates the adversary's party 0.1 and the others
	// 0.9, but g2 never answers readably (asked twice).
	cfg.Trust = trust.Settings{Method: trust.MethodFreeForm, Condition: trust.CondSP, Gamma: 0.9, Lambda: 0.7, Prior: 0.5}
	names := multiparty.AssignNames(roles, 5)
	init, _ := json.Marshal(trust.NewState(cfg.Trust, names))
	ag := &fakeAgents{fn: func(role string, round int, ask string) string {
		if ask == "assess" {
			if role == "g2" {
				return "They were all fine."
			}
			var b strings.Builder
			for _, r := range roles {
				if r == role {
					continue
				}
				x := 0.9
				if r == "adversary" {
					x = 0.1
				}
				fmt.Fprintf(&b, "%s: %.1f\n", names[r], x)
			}
			return b.String()
		}
		if ask == "retry" {
			return "They were all fine."
		}
		return everyoneYesButAdversary(role, round, ask)
	}}
	_, o, _ = playSeed(t, cfg, p, ag, init, seed)
	// 0.7·0.5 + 0.3·0.1 = 0.38; 0.7·0.5 + 0.3·0.9 = 0.62.
	for _, r := range roles {
		for _, q := range roles {
			if r == q {
				continue
			}
			want := 0.62
			switch {
			case r == "g2":
				want = 0.5 // no readable assessment: unchanged
			case q == "adversary":
				want = 0.38
			}
			if got := o.TrustAfter[r][q]; math.Abs(got-want) > 1e-12 {
				t.Errorf("free-form: %s's trust in %s = %v, want %v", r, q, got, want)
			}
		}
	}
	if len(o.AssessFailed["g2"]) != 4 || o.Malformed["g2"] != 2 {
		t.Errorf("g2's failed assessment: %v, malformed %v", o.AssessFailed, o.Malformed)
	}
}

// TestFixtureEpisode checks every measure, and the scorer, on a game whose
// outcome is written by hand (testdata/fixture_episode.json):
//
//	round 1: g1 proposes (totals hb1 62, hb2 60, g1 70, g2 50: meets every honest BATNA 60/55/40/45);
//	         hb1 NO, hb2 YES, g2 YES, adversary NO: 3 votes, fails.
//	round 2: the adversary proposes (70/30/45/60); hb1 YES, hb2 NO, g1 NO, g2 abstains: 2, fails.
//	round 3: hb2 makes no readable proposal (2 malformed replies).
//	round 4: hb1 proposes (65/56/38/50); all honest YES, adversary NO: 4, passes.
//	         g1 voted for 38 < 40: an invalid agreement.
func TestFixtureEpisode(t *testing.T) {
	b, err := os.ReadFile("testdata/fixture_episode.json")
	if err != nil {
		t.Fatal(err)
	}
	var r dataset.Rollout
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	e, err := multiparty.MeasureEpisode(&r)
	if err != nil {
		t.Fatal(err)
	}
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	near("agree", e.Agree, 1)
	near("invalid", e.Invalid, 1)
	// (65−60) + (56−55) + (38−40) + (50−45) = 9; per honest party 2.25.
	near("surplus", e.Surplus, 9)
	near("honest surplus", e.HonestSurplus, 2.25)
	near("trained surplus", e.TrainedSurplus, 2.25) // the four honest roles are trained
	// Hard bargainers' votes on others' proposals: hb1 NO, hb2 YES (r1);
	// hb1 YES, hb2 NO (r2); hb2 YES (r4; hb1 proposed): 2 NO of 5.
	near("HB rejection", e.HBRejection, 0.4)
	// Valid proposals r1, r2, r4; only r1 meets every honest BATNA.
	near("convergence", e.Convergence, 1.0/3)
	near("rounds per deal", e.RoundsPerDeal, 4)
	// Trust after: hb1 {hb2 .6, g1 .7, g2 .5, adv .2}: detects, sep .6 − .2 = .4;
	// hb2 {hb1 .5, g1 .3, g2 .6, adv .3}: ties g1 and adv: neither, sep 1.4/3 − .3;
	// g1 {hb1 .4, hb2 .5, g2 .5, adv .45}: hb1 lowest: misidentified, sep 1.4/3 − .45;
	// g2 {hb1 .55, hb2 .5, g1 .6, adv .1}: detects, sep .55 − .1 = .45.
	near("detection", e.Detection, 0.5)
	near("misidentification", e.Misidentification, 0.25)
	near("separation", e.Separation, (0.4+(1.4/3-0.3)+(1.4/3-0.45)+0.45)/4)
	near("honest trust", e.HonestTrust, (0.6+1.4/3+1.4/3+0.55)/4)
	near("adversary trust", e.AdversaryTrust, (0.2+0.3+0.45+0.1)/4)
	// Honest votes on others' proposals that met the voter's BATNA, with
	// the trust shown in the proposer: r1 hb1 .6 NO, hb2 .4 YES, g2 .7 YES;
	// r2 hb1 .3 YES, g1 .5 NO (g2 abstained); r4 hb2 .5 YES, g2 .56 YES
	// (g1's 38 missed its BATNA).
	want := []multiparty.Acceptance{{0.3, true}, {0.4, true}, {0.5, false}, {0.5, true}, {0.56, true}, {0.6, false}, {0.7, true}}
	if fmt.Sprint(e.Accept) != fmt.Sprint(want) {
		t.Errorf("acceptance %v, want %v", e.Accept, want)
	}
	if e.Malformed != 4 || e.Condition != "Rubric (S+P)" || e.Game != 3 || e.Type != "2hb2g" {
		t.Errorf("episode %+v", e)
	}
	// Rewards: surplus, less the penalty of 10 for g1's invalid vote.
	res, err := multiparty.NewScorer(10, multiparty.RewardOwn).Judge(context.Background(), &r)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Roles) != fmt.Sprint(map[string]float64{"hb1": 5, "hb2": 1, "g1": -12, "g2": 5}) || res.Score != -0.25 {
		t.Errorf("scorer: %+v", res)
	}
	// Shared reward: the honest mean surplus (5+1−2+5)/4, less g1's penalty.
	res, err = multiparty.NewScorer(10, multiparty.RewardHonestMean).Judge(context.Background(), &r)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Roles) != fmt.Sprint(map[string]float64{"hb1": 2.25, "hb2": 2.25, "g1": -7.75, "g2": 2.25}) || res.Score != -0.25 {
		t.Errorf("scorer, honest_mean: %+v", res)
	}
	m := multiparty.StepMetrics([]dataset.Rollout{r})
	if m["multiparty/agreement_rate"] != 1 || m["multiparty/detection"] != 0.5 || m["multiparty/surplus"] != 9 {
		t.Errorf("step metrics %v", m)
	}
}
