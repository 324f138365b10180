package export

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

func TestParseCondition(t *testing.T) {
	obj := map[string]any{"share_given": 0.01, "turn1_refusal": true, "name": "x"}
	tests := []struct {
		in   string
		want bool
		err  bool
	}{
		{"share_given<=0.01", true, false}, {"share_given<0.01", false, false}, {"share_given >= 0", true, false},
		{"share_given==0.01", true, false}, {"share_given!=0.01", false, false}, {"share_given>0.5", false, false},
		{"turn1_refusal==true", true, false}, {"turn1_refusal!=true", false, false}, {"turn1_refusal==false", false, false},
		{"missing<1", false, false}, {"name<1", false, false},
		{"turn1_refusal<true", false, true}, {"share_given", false, true}, {"share_given<=x", false, true}, {"<=1", false, true},
	}
	for _, tt := range tests {
		c, err := ParseCondition(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseCondition(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err == nil && c.holds(obj) != tt.want {
			t.Errorf("%q on %v = %v, want %v", tt.in, obj, !tt.want, tt.want)
		}
	}
}

// TestExportRole writes endowment-like rollouts and exports the holder's
// chats of the games where it gave at most 1%, with and without traces.
func TestExportRole(t *testing.T) {
	dir := t.TempDir()
	views := func(holderReply string) string {
		b, _ := json.Marshal(map[string]any{"share": 0, "views": map[string][]ChatMessage{
			"holder":    {{Role: "system", Content: "You are the holder."}, {Role: "user", Content: "[Your balance: $100.]\n\nGive me $40."}, {Role: "assistant", Content: holderReply}},
			"requester": {{Role: "system", Content: "You are the requester."}, {Role: "user", Content: "Begin."}, {Role: "assistant", Content: "<think>push</think>Give me $40."}, {Role: "user", Content: "No."}},
		}})
		return string(b)
	}
	mk := func(id, holderModel string, share float64, failed bool) dataset.Rollout {
		return dataset.Rollout{RolloutID: id, Step: 0, Env: "endowment", Task: "raise money", Failed: failed, Outcome: views("<think>They push hard.</think>\n\nNo, I keep it."),
			Turns: []dataset.Turn{{Agent: "requester", Text: "Give me $40."}, {Agent: "holder", Text: "No, I keep it."}},
			Roles: []dataset.RoleOutcome{
				{Role: "requester", Model: "req", Scored: true, Reward: float32(share), Outcome: `{"share_got":` + jsonNum(share) + `}`},
				{Role: "holder", Model: holderModel, Scored: true, Reward: float32(1 - share), Outcome: `{"share_given":` + jsonNum(share) + `,"turn1_refusal":true}`},
			}}
	}
	w, err := dataset.NewRolloutWriter(dataset.RunDir(dir).RolloutsPath(0), dataset.RolloutWriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(mk("a", "h1", 0, false), mk("b", "h1", 0.4, false), mk("c", "h2", 0.005, false), mk("d", "h1", 0, true)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	cond, _ := ParseCondition("share_given<=0.01")
	typo, _ := ParseCondition("share_givn<=0.2")
	for _, tc := range []struct {
		name   string
		opts   Options
		ids    []string
		traces bool
		err    string // an error holding this, and no output
	}{
		{"holders that kept it", Options{Role: "holder", Where: []Condition{cond}}, []string{"a", "c"}, false, ""},
		{"with traces", Options{Role: "holder", Where: []Condition{cond}, Traces: true}, []string{"a", "c"}, true, ""},
		{"one agent", Options{Role: "holder", Where: []Condition{cond}, Models: []string{"h1"}}, []string{"a"}, false, ""},
		{"no such role", Options{Role: "holdr"}, nil, false, `role "holdr": none of the 4 rollouts read has it (their roles: holder, requester)`},
		{"no such field", Options{Role: "holder", Where: []Condition{cond, typo}}, nil, false,
			`condition share_givn<=0.2: no holder outcome has the field "share_givn" (their fields: share_given, turn1_refusal)`},
		{"a field of another role", Options{Role: "holder", Where: []Condition{{Key: "share_got", Op: ">", Value: 0}}}, nil, false,
			`no holder outcome has the field "share_got"`},
	} {
		out := filepath.Join(t.TempDir(), "x.jsonl")
		tc.opts.From, tc.opts.Format, tc.opts.Out = dir, FormatJSONL, out
		st, err := Rollouts(context.Background(), tc.opts)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want one holding %q", tc.name, err, tc.err)
			}
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("%s: %s was written", tc.name, out)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		f, _ := os.Open(out)
		var ids []string
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, r.ID)
			last := r.Messages[len(r.Messages)-1]
			if r.Messages[0].Role != "system" || last.Role != "assistant" || strings.Contains(last.Content, "<think>") != tc.traces {
				t.Errorf("%s: %s: messages %+v", tc.name, r.ID, r.Messages)
			}
			if r.Reward == nil || *r.Reward < 0.99 {
				t.Errorf("%s: %s: reward %v is not the holder's", tc.name, r.ID, r.Reward)
			}
		}
		f.Close()
		if strings.Join(ids, ",") != strings.Join(tc.ids, ",") {
			t.Errorf("%s: exported %v, want %v (stats %+v)", tc.name, ids, tc.ids, st)
		}
		if st.SkippedFailed != 1 {
			t.Errorf("%s: %d failed skipped", tc.name, st.SkippedFailed)
		}
	}
}

func jsonNum(x float64) string { b, _ := json.Marshal(x); return string(b) }
