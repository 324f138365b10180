package ifeval

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestEvaluateFixture scores testdata/eval_*.jsonl. The expected verdicts
// were worked out by hand and agree with the Python reference:
//
//	key 1  no_comma, number_words<20         strict T T  loose T T
//	key 2  english_lowercase, title          strict F T  loose T T  (loose drops "Sure! ...")
//	key 3  bullets=3, end_checker, existence strict F T T loose F T T
//	key 4  json_format, quotation            strict T F  loose T F
//	key 5  no_comma on an empty response     strict F    loose F
//
// so strict: prompts 1/5, instructions 6/10; loose: prompts 2/5,
// instructions 7/10.
func TestEvaluateFixture(t *testing.T) {
	inputs, err := LoadInputs("testdata/eval_inputs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	responses, err := LoadResponses("testdata/eval_responses.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != 5 || len(responses) != 7 {
		t.Fatalf("loaded %d inputs and %d responses, want 5 and 7", len(inputs), len(responses))
	}
	rep, err := Evaluate(inputs, responses)
	if err != nil {
		t.Fatal(err)
	}

	wantStrict := [][]bool{{true, true}, {false, true}, {false, true, true}, {true, false}, {false}}
	wantLoose := [][]bool{{true, true}, {true, true}, {false, true, true}, {true, false}, {false}}
	for i, p := range rep.Prompts {
		if !reflect.DeepEqual(p.Strict, wantStrict[i]) || !reflect.DeepEqual(p.Loose, wantLoose[i]) {
			t.Errorf("key %d: strict %v loose %v, want %v and %v", p.Key, p.Strict, p.Loose, wantStrict[i], wantLoose[i])
		}
	}
	if rep.Prompts[0].Response != "Autumn moon rises\nquiet water holds its light\nfrogs sleep in the reeds" {
		t.Errorf("key 1 response = %q, want the last response given for its prompt", rep.Prompts[0].Response)
	}
	if !rep.Prompts[1].FollowAllLoose || rep.Prompts[1].FollowAllStrict {
		t.Errorf("key 2: FollowAllStrict %v FollowAllLoose %v, want false and true", rep.Prompts[1].FollowAllStrict, rep.Prompts[1].FollowAllLoose)
	}

	for _, c := range []struct {
		name string
		got  Tally
		want Tally
	}{
		{"strict prompt", rep.Strict.Prompt, Tally{5, 1}},
		{"strict instruction", rep.Strict.Instruction, Tally{10, 6}},
		{"loose prompt", rep.Loose.Prompt, Tally{5, 2}},
		{"loose instruction", rep.Loose.Instruction, Tally{10, 7}},
		{"strict punctuation", rep.Strict.ByCategory["punctuation"], Tally{2, 1}},
		{"strict change_case", rep.Strict.ByCategory["change_case"], Tally{1, 0}},
		{"loose change_case", rep.Loose.ByCategory["change_case"], Tally{1, 1}},
		{"strict detectable_format", rep.Strict.ByCategory["detectable_format"], Tally{3, 2}},
		{"strict startend", rep.Strict.ByCategory["startend"], Tally{2, 1}},
		{"strict keywords:existence", rep.Strict.ByInstruction["keywords:existence"], Tally{1, 1}},
		{"strict number_bullet_lists", rep.Strict.ByInstruction["detectable_format:number_bullet_lists"], Tally{1, 0}},
		{"loose english_lowercase", rep.Loose.ByInstruction["change_case:english_lowercase"], Tally{1, 1}},
	} {
		if c.got != c.want {
			t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"strict prompt accuracy", rep.Strict.PromptAccuracy(), 0.2},
		{"strict instruction accuracy", rep.Strict.InstructionAccuracy(), 0.6},
		{"loose prompt accuracy", rep.Loose.PromptAccuracy(), 0.4},
		{"loose instruction accuracy", rep.Loose.InstructionAccuracy(), 0.7},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if len(rep.Strict.ByCategory) != 6 || len(rep.Strict.ByInstruction) != 9 {
		t.Errorf("%d categories and %d instruction ids, want 6 and 9", len(rep.Strict.ByCategory), len(rep.Strict.ByInstruction))
	}
}

func TestEvaluateErrors(t *testing.T) {
	in := []Input{{Key: 7, Prompt: "p", InstructionIDs: []string{"punctuation:no_comma"}, Kwargs: []map[string]any{{}}}}
	if _, err := Evaluate(in, nil); err == nil || !strings.Contains(err.Error(), "key 7") {
		t.Errorf("Evaluate without a response: err = %v, want one naming key 7", err)
	}
	in[0].InstructionIDs = []string{"keywords:nope"}
	if _, err := Evaluate(in, []Response{{Prompt: "p", Response: "r"}}); err == nil || !strings.Contains(err.Error(), "keywords:nope") {
		t.Errorf("Evaluate with an unknown id: err = %v, want one naming it", err)
	}
	in[0].InstructionIDs = []string{"punctuation:no_comma", "startend:quotation"}
	if _, err := Evaluate(in, []Response{{Prompt: "p", Response: "r"}}); err == nil {
		t.Errorf("Evaluate with 2 ids and 1 kwargs: err = nil, want an error")
	}
	if (Tally{}).Accuracy() != 0 {
		t.Errorf("Tally{}.Accuracy() = %v, want 0", (Tally{}).Accuracy())
	}
	rep, err := Evaluate(nil, nil)
	if err != nil || rep.Strict.Prompt.Total != 0 || rep.Strict.PromptAccuracy() != 0 {
		t.Errorf("Evaluate(nil, nil) = %+v, %v, want an empty report", rep.Strict, err)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	bad := write("bad.jsonl", `{"key": 1, "prompt": "p", "response": "r", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}`+"\n{not json\n")
	if _, err := LoadInputs(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2: malformed JSON") {
		t.Errorf("LoadInputs(malformed) err = %v, want one naming bad.jsonl:2", err)
	}
	if _, err := LoadResponses(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:2") {
		t.Errorf("LoadResponses(malformed) err = %v, want one naming bad.jsonl:2", err)
	}
	mismatch := write("mismatch.jsonl", `{"key": 3, "prompt": "p", "instruction_id_list": ["a", "b"], "kwargs": [{}]}`+"\n")
	if _, err := LoadInputs(mismatch); err == nil || !strings.Contains(err.Error(), "key 3") {
		t.Errorf("LoadInputs(2 ids, 1 kwargs) err = %v, want one naming key 3", err)
	}
	if _, err := LoadInputs(filepath.Join(dir, "missing.jsonl")); err == nil {
		t.Errorf("LoadInputs(missing file) err = nil, want an error")
	}
	long := write("long.jsonl", `{"prompt": "p", "response": "`+strings.Repeat("x", 3<<20)+`"}`+"\n")
	rs, err := LoadResponses(long)
	if err != nil || len(rs) != 1 || len(rs[0].Response) != 3<<20 {
		t.Errorf("LoadResponses(3 MiB line) = %d responses, %v, want 1", len(rs), err)
	}
}

func TestLooseVariants(t *testing.T) {
	got := LooseVariants("**Title**\nbody *x*\nlast")
	want := []string{
		"**Title**\nbody *x*\nlast",
		"Title\nbody x\nlast",
		"body *x*\nlast",
		"**Title**\nbody *x*",
		"body *x*",
		"body x\nlast",
		"Title\nbody x",
		"body x",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LooseVariants = %q, want %q", got, want)
	}
	one := LooseVariants(" single ")
	if one[2] != "" || one[3] != "" || one[4] != "" {
		t.Errorf("LooseVariants(one line) trimmed variants = %q, want empty", one[2:5])
	}
}

// TestLoadInputsRows: an input row without one of the reference's four
// fields, or without an instruction, is refused by file and line: it would
// otherwise pass without being checked.
func TestLoadInputsRows(t *testing.T) {
	tests := []struct {
		name, row, want string
	}{
		{"complete", `{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}`, ""},
		{"no instruction_id_list", `{"key": 1, "prompt": "p", "kwargs": [{}]}`, "in.jsonl:1: no instruction_id_list"},
		{"null instruction_id_list", `{"key": 1, "prompt": "p", "instruction_id_list": null, "kwargs": []}`, "in.jsonl:1: no instruction_id_list"},
		{"empty instruction_id_list", `{"key": 1, "prompt": "p", "instruction_id_list": [], "kwargs": []}`, "in.jsonl:1: key 1: instruction_id_list is empty"},
		{"no kwargs", `{"key": 1, "prompt": "p", "instruction_id_list": ["punctuation:no_comma"]}`, "in.jsonl:1: no kwargs"},
		{"no prompt", `{"key": 1, "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}`, "in.jsonl:1: no prompt"},
		{"no key", `{"prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}`, "in.jsonl:1: no key"},
	}
	for _, tt := range tests {
		path := filepath.Join(t.TempDir(), "in.jsonl")
		if err := os.WriteFile(path, []byte(tt.row+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := LoadInputs(path)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: LoadInputs = %v, want no error", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: LoadInputs = %v, want %q", tt.name, err, tt.want)
		}
	}
}
