package dataset

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// testRollout builds a rollout with nested turns and token sequences whose
// content depends on i, so that round trips can be compared exactly.
func testRollout(step, i int) Rollout {
	n := 3 + i%5
	seq := func(role string, off int) Sequence {
		s := Sequence{Role: role, Kind: KindDialogue}
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
	r := Rollout{
		RunID: "run", Step: int32(step), PolicyVersion: int32(step - 1), Env: "deliberation",
		PromptID: fmt.Sprintf("d%03d", i/4), GroupID: fmt.Sprintf("s%d-g%d", step, i/4),
		RolloutID: fmt.Sprintf("s%d-r%d", step, i), Index: int32(i % 4),
		Category: CategoryInterpersonal, Task: fmt.Sprintf("Task %d: what do you do?", i),
		PersonaPairID: "p08", Split: SplitTrain,
		Personas: PersonaPair{A: "Be loyal.", B: "Be honest.", NameA: "loyalty", NameB: "truth"}.Personas(), Seed: int64(i) * 7, Temperature: 0.7,
		SystemPrompts: []SystemPrompt{{Role: "A", Text: "You are Agent A."}, {Role: "B", Text: "You are Agent B."}, {Role: "final", Text: "Write the solution."}},
		Turns: []Turn{
			{Agent: "A", Text: fmt.Sprintf("A speaks %d", i), Tokens: 12, FinishReason: "stop"},
			{Agent: "B", Text: fmt.Sprintf("B answers %d", i), Tokens: 9, FinishReason: "length", Agree: i%2 == 0},
		},
		Agreed: i%2 == 0, Rounds: int32(1 + i%3), Final: fmt.Sprintf("Final %d", i),
		Sequences:    []Sequence{seq("A", 0), seq("B", 2), {Role: "final", Kind: KindFinal, InputIDs: []int32{}, LossMask: []int8{}, Logprobs: []float32{}}},
		PrefixBreaks: int32(i % 2), PromptTokens: 40, SampledTokens: 21, Requests: 3,
		Judged: true, JudgeModel: "judge", Score: float32(1 + i%5), JudgeRationale: "because",
		StartedUnixMS: 1_700_000_000_000 + int64(i), RolloutMS: 1234, JudgeMS: 56,
	}
	for _, role := range []string{"A", "B", "final"} {
		r.Roles = append(r.Roles, RoleOutcome{Role: role, Policy: PolicyTrained, Model: "m", Trained: true,
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

// testBatchRows builds n rows of a step's batch with lengths varying by row.
func testBatchRows(step, n int) []BatchRow {
	rows := make([]BatchRow, n)
	for i := range rows {
		l := 4 + i%9
		r := BatchRow{
			RunID: "run", SampleID: fmt.Sprintf("s%d-%d", step, i), GroupID: fmt.Sprintf("g%d", i/8),
			RolloutID: fmt.Sprintf("r%d", i/2), PromptID: fmt.Sprintf("p%d", i/8), Step: int32(step),
			PolicyVersion: int32(step - 1), Env: "deliberation", Role: []string{"A", "B"}[i%2],
			Reward: float32(i%5) / 4, Temperature: 1,
		}
		for k := 0; k < l; k++ {
			m := int8(0)
			if k >= 2 {
				m = 1
			}
			r.InputIDs = append(r.InputIDs, int32(i*100+k))
			r.LossMask = append(r.LossMask, m)
			lp, adv := float32(0), float32(0)
			if m == 1 {
				lp, adv = -0.5, r.Reward-0.5
			}
			r.InferenceLogprobs = append(r.InferenceLogprobs, lp)
			r.Advantages = append(r.Advantages, adv)
		}
		rows[i] = r
	}
	return rows
}

func mustNoErr(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
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

// batchPath and readyPath are a step's batch file and marker in dir.
func batchPath(dir string, step int) string { return filepath.Join(dir, StepName(step)+ParquetExt) }
func readyPath(dir string, step int) string { return ReadyPathOf(batchPath(dir, step)) }

// sampleDilemmas loads the deliberation game's bundled curriculum from its
// folder (the game's package embeds it; this package cannot import the
// game): 40 rows with persona pairs resolved.
func sampleDilemmas() ([]Prompt, error) {
	return LoadPrompts(filepath.Join("..", "rollout", "deliberation", "curricula", "sample-dilemmas.jsonl"), LoadOptions{RequirePersonas: true})
}
