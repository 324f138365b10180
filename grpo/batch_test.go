package grpo

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/golden"
)

func loadBatchInput(t *testing.T) []dataset.Rollout {
	t.Helper()
	b, err := os.ReadFile("testdata/batch_input.json")
	if err != nil {
		t.Fatal(err)
	}
	var rs []dataset.Rollout
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

type goldenBatch struct {
	Mask  string
	Stats BatchStats
	Rows  []dataset.BatchRow
}

func TestBuildBatchGolden(t *testing.T) {
	rs := loadBatchInput(t)
	var got []goldenBatch
	for _, mask := range []string{"dialogue", "dialogue+final", "final"} {
		rows, st, err := BuildBatch(rs, BatchOptions{RunID: "run-x", Step: 3, PolicyVersion: 2, Mask: mask})
		if err != nil {
			t.Fatalf("BuildBatch(mask %q): %v", mask, err)
		}
		got = append(got, goldenBatch{Mask: mask, Stats: st, Rows: rows})
	}
	// One compact JSON line per mode header and per row, so diffs read well.
	var buf bytes.Buffer
	for _, g := range got {
		head, err := json.Marshal(struct {
			Mask  string     `json:"mask"`
			Stats BatchStats `json:"stats"`
		}{g.Mask, g.Stats})
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(head, '\n'))
		for _, row := range g.Rows {
			b, err := json.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			buf.WriteString("  ")
			buf.Write(append(b, '\n'))
		}
	}
	golden.Check(t, "testdata/batch_golden.json", buf.Bytes())
}

// TestBuildBatchInvariants checks the contract row by row, independently of
// the golden file.
func TestBuildBatchInvariants(t *testing.T) {
	rs := loadBatchInput(t)
	tests := []struct {
		mask      string
		wantIDs   []string
		wantEmpty int
		wantKind  int
	}{
		{"dialogue", []string{"p1-0/0", "p1-0/1", "p1-1/1"}, 1, 2},
		{"dialogue+final", []string{"p1-0/0", "p1-0/1", "p1-0/2", "p1-1/1"}, 2, 0},
		{"final", []string{"p1-0/2"}, 1, 4},
		{"", []string{"p1-0/0", "p1-0/1", "p1-1/1"}, 1, 2}, // default: dialogue
	}
	for _, tt := range tests {
		rows, st, err := BuildBatch(rs, BatchOptions{RunID: "run-y", Step: 3, PolicyVersion: 2, Mask: tt.mask})
		if err != nil {
			t.Fatalf("BuildBatch(%q): %v", tt.mask, err)
		}
		var ids []string
		var tokens, trained int64
		for _, row := range rows {
			ids = append(ids, row.SampleID)
			r := findRollout(rs, row.RolloutID)
			_, idx, _ := strings.Cut(row.SampleID, "/")
			si, err := strconv.Atoi(idx)
			if err != nil || row.SampleID != row.RolloutID+"/"+idx {
				t.Fatalf("BuildBatch(%q) sample id %q, want rollout id/index", tt.mask, row.SampleID)
			}
			seq := r.Sequences[si]
			if row.RunID != "run-y" || row.Step != 3 || row.PolicyVersion != 2 || row.GroupID != r.GroupID ||
				row.PromptID != r.PromptID || row.Env != r.Env || row.Role != seq.Role ||
				row.Reward != r.Role(seq.Role).Reward || row.Temperature != r.Temperature ||
				row.Kind != seq.Kind || row.Advantage != r.Role(seq.Role).Advantage {
				t.Errorf("BuildBatch(%q) row %s identity = %+v", tt.mask, row.SampleID, row)
			}
			n := len(row.InputIDs)
			if len(row.LossMask) != n || len(row.Advantages) != n || len(row.InferenceLogprobs) != n {
				t.Fatalf("BuildBatch(%q) row %s: lengths %d/%d/%d/%d", tt.mask, row.SampleID,
					n, len(row.LossMask), len(row.Advantages), len(row.InferenceLogprobs))
			}
			tokens += int64(n)
			for i := range n {
				if row.InputIDs[i] != seq.InputIDs[i] || row.LossMask[i] != seq.LossMask[i] {
					t.Errorf("BuildBatch(%q) row %s token %d differs from the rollout", tt.mask, row.SampleID, i)
				}
				wantAdv, wantLP := float32(0), float32(0)
				if seq.LossMask[i] == 1 {
					wantAdv, wantLP = r.Role(seq.Role).Advantage, seq.Logprobs[i]
					trained++
				}
				if row.Advantages[i] != wantAdv || row.InferenceLogprobs[i] != wantLP {
					t.Errorf("BuildBatch(%q) row %s token %d: advantage %v logprob %v, want %v %v",
						tt.mask, row.SampleID, i, row.Advantages[i], row.InferenceLogprobs[i], wantAdv, wantLP)
				}
			}
		}
		if strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
			t.Errorf("BuildBatch(%q) sample ids = %v, want %v", tt.mask, ids, tt.wantIDs)
		}
		if st.Rows != len(rows) || st.EmptyMask != tt.wantEmpty || st.NotTrainedKind != tt.wantKind ||
			st.SkippedUnscored != 1 || st.Tokens != tokens || st.TrainedTokens != trained || st.Rollouts != 3 {
			t.Errorf("BuildBatch(%q) stats = %+v, want rows %d, empty %d, kind %d, unscored 1, tokens %d, trained %d",
				tt.mask, st, len(rows), tt.wantEmpty, tt.wantKind, tokens, trained)
		}
	}
	// The batch owns its slices.
	rows, _, _ := BuildBatch(rs, BatchOptions{Step: 3, PolicyVersion: 2})
	rows[0].InputIDs[0] = -7
	if rs[0].Sequences[0].InputIDs[0] == -7 {
		t.Error("BuildBatch row aliases the rollout's input_ids")
	}
	if rows[0].RunID != "run-x" {
		t.Errorf("BuildBatch with empty RunID: run_id = %q, want the rollout's %q", rows[0].RunID, "run-x")
	}
}

func findRollout(rs []dataset.Rollout, id string) dataset.Rollout {
	for _, r := range rs {
		if r.RolloutID == id {
			return r
		}
	}
	return dataset.Rollout{}
}

func TestBuildBatchErrors(t *testing.T) {
	good := func() dataset.Rollout {
		return dataset.Rollout{RolloutID: "r-1", GroupID: "g", Judged: true, PolicyVersion: 1,
			Roles: []dataset.RoleOutcome{{Role: "A", Trained: true, Scored: true, Reward: 1, Advantage: 1}},
			Sequences: []dataset.Sequence{{Role: "A", Kind: dataset.KindDialogue,
				InputIDs: []int32{1, 2, 3}, LossMask: []int8{0, 1, 1}, Logprobs: []float32{0, -1, -2}}}}
	}
	tests := []struct {
		name   string
		mutate func(*dataset.Rollout)
		opts   BatchOptions
		want   string
	}{
		{"short mask", func(r *dataset.Rollout) { r.Sequences[0].LossMask = []int8{0, 1} }, BatchOptions{}, `rollout "r-1" sequence 0: lengths differ`},
		{"short logprobs", func(r *dataset.Rollout) { r.Sequences[0].Logprobs = nil }, BatchOptions{}, `rollout "r-1" sequence 0: lengths differ`},
		{"mask value", func(r *dataset.Rollout) { r.Sequences[0].LossMask[1] = 2 }, BatchOptions{}, "loss_mask 2"},
		{"bad kind", func(r *dataset.Rollout) { r.Sequences[0].Kind = "prompt" }, BatchOptions{}, `unknown kind "prompt"`},
		{"nan logprob", func(r *dataset.Rollout) { r.Sequences[0].Logprobs[2] = float32(math.NaN()) }, BatchOptions{}, "logprob NaN"},
		{"nan advantage", func(r *dataset.Rollout) { r.Roles[0].Advantage = float32(math.Inf(1)) }, BatchOptions{}, `rollout "r-1" role A has advantage +Inf`},
		{"no id", func(r *dataset.Rollout) { r.RolloutID = "" }, BatchOptions{}, "has no rollout_id"},
		{"policy version", func(r *dataset.Rollout) {}, BatchOptions{PolicyVersion: 5}, `rollout "r-1" was sampled by policy version 1`},
		{"mask mode", func(r *dataset.Rollout) {}, BatchOptions{Mask: "tokens"}, `unknown mask mode "tokens"`},
		{"negative step", func(r *dataset.Rollout) {}, BatchOptions{Step: -1}, "step -1 out of range"},
	}
	for _, tt := range tests {
		r := good()
		tt.mutate(&r)
		if tt.opts.PolicyVersion == 0 {
			tt.opts.PolicyVersion = 1
		}
		_, _, err := BuildBatch([]dataset.Rollout{r}, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: BuildBatch() error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if _, _, err := BuildBatch([]dataset.Rollout{good()}, BatchOptions{PolicyVersion: 1}); err != nil {
		t.Errorf("BuildBatch(good) = %v", err)
	}
}

func TestParseMaskMode(t *testing.T) {
	tests := []struct {
		in       string
		want     MaskMode
		dialogue bool
		final    bool
		wantErr  bool
	}{
		{"dialogue", MaskDialogue, true, false, false},
		{"dialogue+final", MaskDialogueFinal, true, true, false},
		{"final", MaskFinal, false, true, false},
		{"", "", false, false, true},
		{"Dialogue", "", false, false, true},
		{"dialogue,final", "", false, false, true},
	}
	for _, tt := range tests {
		got, err := ParseMaskMode(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMaskMode(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), "want \"dialogue\", \"dialogue+final\" or \"final\"") {
				t.Errorf("ParseMaskMode(%q) error = %q, want the valid modes listed", tt.in, err)
			}
			continue
		}
		if got.Trains(dataset.KindDialogue) != tt.dialogue || got.Trains(dataset.KindFinal) != tt.final || got.Trains("other") {
			t.Errorf("%q.Trains(dialogue, final, other) = %v, %v, %v; want %v, %v, false", got,
				got.Trains(dataset.KindDialogue), got.Trains(dataset.KindFinal), got.Trains("other"), tt.dialogue, tt.final)
		}
	}
}
