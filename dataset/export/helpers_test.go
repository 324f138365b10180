package export

import (
	"fmt"
	"os"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// testRollout builds a rollout with nested turns and token sequences whose
// content depends on i (dataset's tests build the same): every 7th, from
// the 4th, failed; the rest judged.
func testRollout(step, i int) dataset.Rollout {
	n := 3 + i%5
	seq := func(role string, off int) dataset.Sequence {
		s := dataset.Sequence{Role: role, Kind: dataset.KindDialogue}
		for k := 0; k < n+off; k++ {
			s.InputIDs = append(s.InputIDs, int32(1000*i+k))
			s.LossMask = append(s.LossMask, int8(k%2))
			lp := float32(0)
			if k%2 == 1 {
				lp = -0.25 * float32(k)
			}
			s.Logprobs = append(s.Logprobs, lp)
		}
		return s
	}
	r := dataset.Rollout{
		RunID: "run", Step: int32(step), PolicyVersion: int32(step - 1), Env: "deliberation",
		PromptID: fmt.Sprintf("d%03d", i/4), GroupID: fmt.Sprintf("s%d-g%d", step, i/4),
		RolloutID: fmt.Sprintf("s%d-r%d", step, i), Index: int32(i % 4),
		Category: dataset.CategoryInterpersonal, Task: fmt.Sprintf("Task %d: what do you do?", i),
		PersonaPairID: "p08", Split: dataset.SplitTrain,
		Personas: dataset.PersonaPair{A: "Be loyal.", B: "Be honest.", NameA: "loyalty", NameB: "truth"}.Personas(), Seed: int64(i) * 7, Temperature: 0.7,
		SystemPrompts: []dataset.SystemPrompt{{Role: "A", Text: "You are Agent A."}, {Role: "B", Text: "You are Agent B."}, {Role: "final", Text: "Write the solution."}},
		Turns: []dataset.Turn{
			{Agent: "A", Text: fmt.Sprintf("A speaks %d", i), Tokens: 12, FinishReason: "stop"},
			{Agent: "B", Text: fmt.Sprintf("B answers %d", i), Tokens: 9, FinishReason: "length", Agree: i%2 == 0},
		},
		Agreed: i%2 == 0, Rounds: int32(1 + i%3), Final: fmt.Sprintf("Final %d", i),
		Sequences:    []dataset.Sequence{seq("A", 0), seq("B", 2), {Role: "final", Kind: dataset.KindFinal, InputIDs: []int32{}, LossMask: []int8{}, Logprobs: []float32{}}},
		PrefixBreaks: int32(i % 2), PromptTokens: 40, SampledTokens: 21, Requests: 3,
		Judged: true, JudgeModel: "judge", Score: float32(1 + i%5), JudgeRationale: "because",
		StartedUnixMS: 1_700_000_000_000 + int64(i), RolloutMS: 1234, JudgeMS: 56,
	}
	for _, role := range []string{"A", "B", "final"} {
		r.Roles = append(r.Roles, dataset.RoleOutcome{Role: role, Policy: dataset.PolicyTrained, Model: "m", Trained: true,
			Scored: true, Score: r.Score, Reward: float32(1+i%5) / 5, Advantage: float32(i%3) - 1})
	}
	if i%7 == 3 {
		r.Failed, r.Error, r.Judged, r.Score = true, "judge: timeout", false, 0
		for k := range r.Roles {
			r.Roles[k].Scored, r.Roles[k].Score, r.Roles[k].Reward, r.Roles[k].Advantage = false, 0, 0, 0
		}
	}
	return r
}

// rewardOf is the reward of r's first trained, scored role (0 if none).
func rewardOf(r dataset.Rollout) float32 {
	for _, ro := range r.Roles {
		if ro.Trained && ro.Scored {
			return ro.Reward
		}
	}
	return 0
}

// testBatchRows builds n rows of a step's training batch.
func testBatchRows(step, n int) []dataset.BatchRow {
	rows := make([]dataset.BatchRow, n)
	for i := range rows {
		rows[i] = dataset.BatchRow{
			RunID: "run", SampleID: fmt.Sprintf("s%d-%d", step, i), GroupID: "g0", RolloutID: fmt.Sprintf("r%d", i/2),
			PromptID: "p0", Step: int32(step), Env: "deliberation", Role: []string{"A", "B"}[i%2], Temperature: 1,
			InputIDs: []int32{1, 2, 3}, LossMask: []int8{0, 1, 1}, InferenceLogprobs: []float32{0, -0.5, -0.5}, Advantages: []float32{0, 0.5, 0.5},
		}
	}
	return rows
}

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	mustNoErr(t, err)
	return b
}

func openT(t *testing.T, path string) (*os.File, *parquet.File, func()) {
	t.Helper()
	f, pf, err := dataset.OpenParquet(path)
	mustNoErr(t, err)
	return f, pf, func() { f.Close() }
}

// checkZstd checks that every column chunk of a file is zstd-compressed.
func checkZstd(t testing.TB, pf *parquet.File) {
	t.Helper()
	for i, rg := range pf.Metadata().RowGroups {
		for j, c := range rg.Columns {
			if c.MetaData.Codec != format.Zstd {
				t.Errorf("row group %d column %d codec %v, want ZSTD", i, j, c.MetaData.Codec)
			}
		}
	}
}
