package reward

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/sim"
)

// simJudge starts serve-sim with o over real HTTP and returns chat
// options for its judge (no cache, fast retries).
func simJudge(t *testing.T, o sim.Options) chat.Options {
	t.Helper()
	s, err := sim.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); srv.Close() })
	return chat.Options{
		BaseURL:     srv.URL + "/v1",
		Model:       "sim-judge",
		Concurrency: 8,
		Retry:       retry.Policy{MaxRetries: 2, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond},
		Timeout:     5 * time.Second,
	}
}

// groupCues are the sentences the test finals are made of: member m of a
// group says the first m%len of them, so the simulated judge's scores
// spread over the rubric.
var groupCues = []string{
	"Together we build shared trust.",
	"Everyone gains agency and autonomy.",
	"A collaborative, inclusive plan for all involved.",
	"Mutual empowerment and dignity for the whole community.",
	"We decide jointly, by consensus, with fairness.",
}

// groupedRollouts is groups × size deliberation rollouts: each group one
// task, its members finals of growing collective-agency content.
func groupedRollouts(groups, size int) []dataset.Rollout {
	var rs []dataset.Rollout
	for g := 0; g < groups; g++ {
		for m := 0; m < size; m++ {
			r := *therapist()
			r.Task = fmt.Sprintf("%s (case %d)", r.Task, g)
			r.GroupID = fmt.Sprintf("step-1-group-%d", g)
			r.RolloutID = fmt.Sprintf("%s-r%d", r.GroupID, m)
			r.Final = fmt.Sprintf("Plan %d for case %d: %s", m, g, strings.Join(groupCues[:m%(len(groupCues)+1)], " "))
			rs = append(rs, r)
		}
	}
	return rs
}

// TestCASystemUnchanged: the pointwise rubric prompt is byte for byte
// what it was before the rubric was shared with the group prompt, so the
// judge caches of earlier runs still answer.
func TestCASystemUnchanged(t *testing.T) {
	sum := sha256.Sum256([]byte(caSystem))
	if got, want := hex.EncodeToString(sum[:]), "0095edb80818ccc54e528c213677147b9515377710ba94c0632c363374a7b3de"; got != want {
		t.Errorf("caSystem's sha256 = %s, want %s (the pointwise prompt changed: bump CARubricVersion if meant)", got, want)
	}
}

// TestGroupJudgeOnSim scores 4 groups of 8 in group mode on serve-sim:
// one request per group, every member scored exactly as pointwise scoring
// scores it (the simulated judge scores each text alone), each score
// recording its label and place in a shuffled, seeded order that repeats.
func TestGroupJudgeOnSim(t *testing.T) {
	opts := simJudge(t, sim.Options{})
	point := groupedRollouts(4, 8)
	pc, _ := newTestChat(t, opts)
	if st := ScoreAll(context.Background(), NewCAJudge(pc), point, 8); st.Judged != 32 || st.Calls != 32 {
		t.Fatalf("pointwise ScoreAll = %+v, want 32 judged in 32 calls", st)
	}
	run := func(seed int64) ([]dataset.Rollout, ScoreStats) {
		c, _ := newTestChat(t, opts)
		rs := groupedRollouts(4, 8)
		return rs, ScoreAll(context.Background(), NewCAGroupJudge(c, GroupOptions{Seed: seed}), rs, 8)
	}
	rs, st := run(1)
	if st.Judged != 32 || st.Failed != 0 || st.Calls != 4 || st.PromptTokens == 0 {
		t.Fatalf("group ScoreAll = %+v, want 32 judged in 4 calls", st)
	}
	head := regexp.MustCompile(`^\[group: (S\d+) at (\d+) of 8, shuffle [0-9a-f]{16}\] `)
	distinct := map[int]bool{}
	for g := 0; g < 4; g++ {
		seen := map[string]bool{}
		identity := true
		for m := 0; m < 8; m++ {
			r, p := rs[g*8+m], point[g*8+m]
			if !r.Judged || r.Score != p.Score {
				t.Errorf("%s: group score %v (judged %v, %s), pointwise %v", r.RolloutID, r.Score, r.Judged, r.JudgeError, p.Score)
			}
			sub := head.FindStringSubmatch(r.JudgeRationale)
			if sub == nil {
				t.Fatalf("%s: rationale %q does not start with its group order", r.RolloutID, r.JudgeRationale)
			}
			if seen[sub[1]] || "S"+sub[2] != sub[1] {
				t.Errorf("%s: label %s at %s (repeated or mislabelled)", r.RolloutID, sub[1], sub[2])
			}
			seen[sub[1]] = true
			if sub[2] != fmt.Sprint(m+1) {
				identity = false
			}
			distinct[int(r.Score)] = true
		}
		if identity {
			t.Errorf("group %d was shown in its own order, not shuffled", g)
		}
	}
	if len(distinct) < 3 {
		t.Errorf("scores %v: the test finals do not spread over the rubric", distinct)
	}
	again, _ := run(1)
	other, _ := run(2)
	moved := 0
	for i := range rs {
		if again[i].JudgeRationale != rs[i].JudgeRationale {
			t.Errorf("%s: seed 1 gave %q, then %q: the order does not repeat", rs[i].RolloutID, rs[i].JudgeRationale, again[i].JudgeRationale)
		}
		if other[i].JudgeRationale != rs[i].JudgeRationale {
			moved++
		}
	}
	if moved == 0 {
		t.Errorf("seeds 1 and 2 showed every group in the same order")
	}
}

// TestGroupJudgeBadReply: a group reply with a missing, repeated,
// out-of-range or unknown member is a judge failure of every member of
// the group, retried and then recorded as JudgeError, never a partial
// score.
func TestGroupJudgeBadReply(t *testing.T) {
	for _, tt := range []struct {
		fault string
		want  string
	}{
		{sim.GroupFaultMissing, "did not score S"},
		{sim.GroupFaultRepeated, "more than once"},
		{sim.GroupFaultOutOfRange, "out of range 1-5"},
		{sim.GroupFaultUnknown, "not one of S1"},
	} {
		t.Run(tt.fault, func(t *testing.T) {
			c, _ := newTestChat(t, simJudge(t, sim.Options{JudgeGroupFault: tt.fault}))
			rs := groupedRollouts(2, 4)
			st := ScoreAll(context.Background(), NewCAGroupJudge(c, GroupOptions{Seed: 1}), rs, 4)
			if st.Judged != 0 || st.Failed != 8 {
				t.Errorf("ScoreAll = %+v, want all 8 failed", st)
			}
			for _, r := range rs {
				if r.Judged || r.Score != 0 || !strings.Contains(r.JudgeError, tt.want) || !strings.Contains(r.JudgeError, r.GroupID) {
					t.Errorf("%s: judged %v score %v error %q, want unjudged with an error naming its group and %q", r.RolloutID, r.Judged, r.Score, r.JudgeError, tt.want)
				}
			}
		})
	}
}

// TestParseGroup reads group replies: whole, fenced, in prose, and the
// bad ones, each refused with a verdict error (retried).
func TestParseGroup(t *testing.T) {
	labels := []string{"S1", "S2", "S3"}
	for _, tt := range []struct {
		name, content string
		want          []float64 // nil: an error containing err
		err           string
	}{
		{"strict", `{"scores":[{"label":"S2","rationale":"b","score":2},{"label":"S1","rationale":"a","score":5},{"label":"S3","rationale":"c","score":1}]}`, []float64{5, 2, 1}, ""},
		{"fenced in prose", "Here:\n```json\n{\"scores\":[{\"label\":\"S1\",\"score\":\"3\"},{\"label\":\"S2\",\"score\":4},{\"label\":\"S3\",\"score\":4}]}\n```", []float64{3, 4, 4}, ""},
		{"missing", `{"scores":[{"label":"S1","score":2},{"label":"S2","score":2}]}`, nil, "did not score S3"},
		{"repeated", `{"scores":[{"label":"S1","score":2},{"label":"S2","score":2},{"label":"S1","score":3}]}`, nil, "S1 more than once"},
		{"out of range", `{"scores":[{"label":"S1","score":0},{"label":"S2","score":2},{"label":"S3","score":3}]}`, nil, "out of range"},
		{"fractional", `{"scores":[{"label":"S1","score":2.5},{"label":"S2","score":2},{"label":"S3","score":3}]}`, nil, "not an integer"},
		{"unknown label", `{"scores":[{"label":"S1","score":2},{"label":"S2","score":2},{"label":"S4","score":3}]}`, nil, `"S4"`},
		{"no score", `{"scores":[{"label":"S1"},{"label":"S2","score":2},{"label":"S3","score":3}]}`, nil, "S1 no score"},
		{"not a list", `{"scores":{"S1":2}}`, nil, "not a list"},
		{"no scores", `Score: 4`, nil, "no group of scores"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			items, err := parseGroup(chat.Reply{Content: tt.content}, labels)
			if tt.want == nil {
				if err == nil || !errors.Is(err, chat.ErrNoVerdict) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("parseGroup = %+v, %v; want a verdict error containing %q", items, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range items {
				if it.Label != labels[i] || it.Score != tt.want[i] {
					t.Errorf("item %d = %+v, want %s scored %v", i, it, labels[i], tt.want[i])
				}
			}
		})
	}
}

// TestGroupPositionCheck re-scores groups in reversed order: an unbiased
// judge moves no score; a judge that favours the solution shown first
// moves some, and each score records both places.
func TestGroupPositionCheck(t *testing.T) {
	for _, tt := range []struct {
		name      string
		fault     string
		share     float64
		wantMoved bool
		wantCalls int
	}{
		{"unbiased", "", 1, false, 8},
		{"first-bias", sim.GroupFaultFirstBias, 1, true, 8},
		{"no check", sim.GroupFaultFirstBias, 0, false, 4},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := newTestChat(t, simJudge(t, sim.Options{JudgeGroupFault: tt.fault}))
			rs := groupedRollouts(4, 8)
			st := ScoreAll(context.Background(), NewCAGroupJudge(c, GroupOptions{Seed: 3, PositionCheck: tt.share}), rs, 4)
			if st.Judged != 32 || st.Calls != tt.wantCalls {
				t.Fatalf("ScoreAll = %+v, want 32 judged in %d calls", st, tt.wantCalls)
			}
			checked := tt.share > 0
			if checked && (st.PositionGroups != 4 || st.PositionMembers != 32) || !checked && st.PositionGroups != 0 {
				t.Errorf("ScoreAll = %+v, want %v groups position-checked", st, checked)
			}
			if got := st.PositionMoved > 0; got != tt.wantMoved {
				t.Errorf("PositionMoved = %d (share %.2f), want moved %v", st.PositionMoved, st.PositionMovedShare(), tt.wantMoved)
			}
			for _, r := range rs {
				if got := strings.Contains(r.JudgeRationale, "; reversed: at "); got != checked {
					t.Errorf("%s: rationale %q records the reversed place: %v, want %v", r.RolloutID, r.JudgeRationale, got, checked)
				}
			}
		})
	}
}

// TestGroupPositionCheckShare: a share of 0.5 checks about half of 40
// groups, the same ones for a seed.
func TestGroupPositionCheckShare(t *testing.T) {
	j := NewCAGroupJudge(nil, GroupOptions{Seed: 5, PositionCheck: 0.5})
	n := 0
	for g := 0; g < 40; g++ {
		r := &dataset.Rollout{GroupID: fmt.Sprintf("g%d", g), RolloutID: "r"}
		first := j.checked([]*dataset.Rollout{r})
		if first {
			n++
		}
		if again := NewCAGroupJudge(nil, GroupOptions{Seed: 5, PositionCheck: 0.5}).checked([]*dataset.Rollout{r}); again != first {
			t.Fatal("the draw is not reproducible")
		}
	}
	if n < 10 || n > 30 {
		t.Errorf("%d of 40 groups checked at share 0.5", n)
	}
}

// TestGroupJudgeRecordsBackend: a group verdict records the model and
// system fingerprint the judge API reported on every member's result, and
// the group judge is metered like the pointwise one (its chat client's
// counters are a run's judge metrics).
func TestGroupJudgeRecordsBackend(t *testing.T) {
	c, _ := newTestChat(t, simJudge(t, sim.Options{}))
	j := NewCAGroupJudge(c, GroupOptions{Seed: 1})
	rs := groupedRollouts(1, 4)
	ptrs := make([]*dataset.Rollout, len(rs))
	for i := range rs {
		ptrs[i] = &rs[i]
	}
	v, err := j.JudgeGroup(context.Background(), ptrs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range v.Results {
		if r.SystemFingerprint != sim.DefaultFingerprint || r.ReportedModel == "" {
			t.Errorf("member %d: backend %q %q, want the reply's model and %q", i, r.ReportedModel, r.SystemFingerprint, sim.DefaultFingerprint)
		}
	}
	var m Metered = j
	if st := m.ChatClient().Stats(); st.Requests != 1 {
		t.Errorf("the group judge's client counted %d calls, want 1", st.Requests)
	}
}
