package harness

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
)

func TestParseSide(t *testing.T) {
	tests := []struct {
		in    string
		want  SideSpec
		label string
		err   bool
	}{
		{in: "base", want: SideSpec{Spec: "base"}, label: "base"},
		{in: "adapter:ca-100", want: SideSpec{Model: "ca-100", Spec: "adapter:ca-100"}, label: "ca-100"},
		{in: "adapter:ca-100=/ckpt/step-100", want: SideSpec{Model: "ca-100", AdapterPath: "/ckpt/step-100", Spec: "adapter:ca-100=/ckpt/step-100"}, label: "ca-100"},
		{in: "http://h:8000", want: SideSpec{Endpoints: []string{"http://h:8000"}, Spec: "http://h:8000"}, label: "http://h:8000"},
		{in: "https://u:secret@h:8000#single", want: SideSpec{Endpoints: []string{"https://u:secret@h:8000"}, Model: "single", Spec: "https://u:secret@h:8000#single"}, label: "single"},
		{in: "https://u:secret@h:8000", want: SideSpec{Endpoints: []string{"https://u:secret@h:8000"}, Spec: "https://u:secret@h:8000"}, label: "https://u:xxxxx@h:8000"},
		{in: "", err: true},
		{in: "adapter:", err: true},
		{in: "adapter:x=", err: true},
		{in: "http://", err: true},
		{in: "http://h:8000?x=1", err: true},
		{in: "ftp://h", err: true},
		{in: "ca-100", err: true},
	}
	for _, tt := range tests {
		got, err := ParseSide(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("ParseSide(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseSide(%q): %v", tt.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseSide(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if l := got.Label(); l != tt.label {
			t.Errorf("ParseSide(%q).Label() = %q, want %q", tt.in, l, tt.label)
		}
	}
}

func TestEvalSplitAndSample(t *testing.T) {
	ps := []dataset.Prompt{{ID: "a", Split: "train"}, {ID: "b", Split: "eval"}, {ID: "c"}, {ID: "d", Split: "eval"}}
	if got := EvalSplit(ps); len(got) != 2 || got[0].ID != "b" || got[1].ID != "d" {
		t.Errorf("EvalSplit = %v, want b and d", got)
	}
	if got := EvalSplit(ps[:1]); len(got) != 1 || got[0].ID != "a" {
		t.Errorf("EvalSplit(no eval split) = %v, want every prompt", got)
	}
	many := make([]dataset.Prompt, 40)
	for i := range many {
		many[i].ID = fmt.Sprintf("p%02d", i)
	}
	got := SamplePrompts(many, 10, 1)
	if len(got) != 10 || !slices.IsSortedFunc(got, func(a, b dataset.Prompt) int { return strings.Compare(a.ID, b.ID) }) {
		t.Fatalf("SamplePrompts = %v, want 10 in their order", got)
	}
	seen := map[string]bool{}
	for _, p := range got {
		if seen[p.ID] {
			t.Errorf("SamplePrompts repeats %s", p.ID)
		}
		seen[p.ID] = true
	}
	if again := SamplePrompts(many, 10, 1); !reflect.DeepEqual(again, got) {
		t.Errorf("SamplePrompts is not deterministic")
	}
	if other := SamplePrompts(many, 10, 2); reflect.DeepEqual(other, got) {
		t.Errorf("SamplePrompts ignores its seed")
	}
	if all := SamplePrompts(many, 0, 1); len(all) != 40 {
		t.Errorf("SamplePrompts(0) = %d prompts, want all 40", len(all))
	}
}
