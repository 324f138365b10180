package export

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/internal/golden"
)

// TestExportGolden exports the runs of testdata in every format,
// with and without filters and roles, and compares every file written,
// byte for byte, and the stats with testdata/golden/CASE/.
func TestExportGolden(t *testing.T) {
	in := "testdata"
	cond := func(s string) Condition {
		c, err := ParseCondition(s)
		mustNoErr(t, err)
		return c
	}
	tests := []struct {
		name string
		opts Options
	}{
		{"run-jsonl", Options{From: filepath.Join(in, "run"), Format: FormatJSONL}},
		{"run-hf", Options{From: filepath.Join(in, "run"), Format: FormatHF, ShardRows: 8}},
		{"run-hf-filtered", Options{From: filepath.Join(in, "run"), Format: FormatHF, MinStep: 2, MaxStep: 2,
			AgreedOnly: true, MinReward: f64(0.3), IncludeFailed: true, Scale: dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}}},
		{"files-jsonl", Options{In: []string{filepath.Join(in, "run", "rollouts", "step-000002.parquet"), filepath.Join(in, "v1.parquet")},
			Format: FormatJSONL, IncludeFailed: true, Scale: dataset.ScoreScale{Name: "CA", Min: 1, Max: 5}}},
		{"v1-hf", Options{From: filepath.Join(in, "v1.parquet"), Format: FormatHF}},
		{"role-jsonl", Options{From: filepath.Join(in, "roles"), Format: FormatJSONL, Role: "holder", Where: []Condition{cond("share_given<=0.01")}}},
		{"role-traces-hf", Options{From: filepath.Join(in, "roles"), Format: FormatHF, Role: "holder", Models: []string{"h1"},
			Where: []Condition{cond("turn1_refusal==true")}, Traces: true}},
		{"role-requester-jsonl", Options{From: filepath.Join(in, "roles"), Format: FormatJSONL, Role: "requester", IncludeFailed: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out")
			opts := tt.opts
			opts.Out = out
			st, err := Rollouts(context.Background(), opts)
			mustNoErr(t, err)
			want := filepath.Join(in, "golden", tt.name)
			var files []string
			mustNoErr(t, filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(out, p)
				files = append(files, filepath.ToSlash(rel))
				b, err := os.ReadFile(p)
				mustNoErr(t, err)
				golden.Check(t, filepath.Join(want, rel), b)
				return nil
			}))
			for i, o := range st.Outputs {
				st.Outputs[i], _ = filepath.Rel(out, o)
			}
			b, err := json.MarshalIndent(struct {
				Files []string
				Stats Stats
			}{files, st}, "", "  ")
			mustNoErr(t, err)
			golden.Check(t, filepath.Join(want, "..", tt.name+".stats.json"), append(b, '\n'))
			// No golden file is left without an output.
			mustNoErr(t, filepath.WalkDir(want, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(want, p)
				if !slices.Contains(files, filepath.ToSlash(rel)) && !strings.HasPrefix(rel, ".") {
					t.Errorf("golden file %s was not written", p)
				}
				return nil
			}))
		})
	}
}
