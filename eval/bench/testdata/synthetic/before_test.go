// This file wrote parley-before.jsonl: parley's own scorer at b89a282 (the
// tree before the scorers were named), on the synthetic set. It is not
// built here (the go tool skips testdata); README.md says how to run it in
// a copy of that tree.

package bench

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func TestWriteBefore(t *testing.T) {
	out, err := os.Create(os.Getenv("BEFORE_OUT"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	enc := json.NewEncoder(out)
	read := func(name string) []Response {
		b, err := os.ReadFile("testdata/synthetic/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var rs []Response
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r Response
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	type row struct {
		Benchmark string `json:"benchmark"`
		ID        string `json:"id"`
		Run       int    `json:"run"`
		Got       string `json:"got"`
		Correct   bool   `json:"correct"`
	}
	emit := func(bench string, res Result, rs []Response) {
		byKey := map[[2]any]ItemScore{}
		for _, is := range res.Items {
			byKey[[2]any{is.ID, is.Run}] = is
		}
		for _, r := range rs {
			is := byKey[[2]any{r.ID, r.Run}]
			if err := enc.Encode(row{bench, r.ID, r.Run, is.Got, is.Correct}); err != nil {
				t.Fatal(err)
			}
		}
	}
	gi, err := LoadGPQA("testdata/synthetic/gpqa.csv")
	if err != nil {
		t.Fatal(err)
	}
	grs := read("gpqa-responses.jsonl")
	gres, err := ScoreGPQA(gi, grs, 0)
	if err != nil {
		t.Fatal(err)
	}
	emit(GPQADiamond, gres, grs)
	ai, err := LoadAIME("testdata/synthetic/aime.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	ars := read("aime-responses.jsonl")
	ares, err := ScoreAIME(AIME2024, ai, ars)
	if err != nil {
		t.Fatal(err)
	}
	emit(AIME2024, ares, ars)
}
