package ifeval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/parleyhq/parley/internal/textfile"
)

// Input is one benchmark prompt, a line of IFEval's input_data.jsonl.
type Input struct {
	Key            int              `json:"key"`
	Prompt         string           `json:"prompt"`
	InstructionIDs []string         `json:"instruction_id_list"`
	Kwargs         []map[string]any `json:"kwargs"`
}

// Response is a model's response to a prompt, a line of the reference's
// input_response_data JSONL.
type Response struct {
	Prompt   string `json:"prompt"`
	Response string `json:"response"`
}

// LoadInputs reads IFEval input data: one JSON object per line with key,
// prompt, instruction_id_list and kwargs. Blank lines are skipped. A row
// without one of the four fields (the reference raises KeyError), or with
// no instruction to check (it would pass without a check), is an error
// naming the file and line.
func LoadInputs(path string) ([]Input, error) {
	var out []Input
	err := readJSONL(path, func(data []byte) error {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(data, &fields); err != nil {
			return fmt.Errorf("malformed JSON: %w", err)
		}
		for _, k := range []string{"key", "prompt", "instruction_id_list", "kwargs"} {
			if v, ok := fields[k]; !ok || string(v) == "null" {
				return fmt.Errorf("no %s (an IFEval input row has key, prompt, instruction_id_list and kwargs)", k)
			}
		}
		var in Input
		if err := json.Unmarshal(data, &in); err != nil {
			return err
		}
		if len(in.InstructionIDs) == 0 {
			return fmt.Errorf("key %d: instruction_id_list is empty: the prompt would count as followed without a check", in.Key)
		}
		if len(in.Kwargs) != len(in.InstructionIDs) {
			return fmt.Errorf("key %d: %d instruction ids but %d kwargs", in.Key, len(in.InstructionIDs), len(in.Kwargs))
		}
		out = append(out, in)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ifeval.LoadInputs: %w", err)
	}
	return out, nil
}

// LoadResponses reads responses: one JSON object per line with prompt and
// response. Blank lines are skipped.
func LoadResponses(path string) ([]Response, error) {
	var out []Response
	err := readJSONL(path, func(data []byte) error {
		var r Response
		if err := json.Unmarshal(data, &r); err != nil {
			return err
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ifeval.LoadResponses: %w", err)
	}
	return out, nil
}

func readJSONL(path string, fn func(data []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(textfile.NewReader(f, 64<<10))
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for n := 1; sc.Scan(); n++ {
		data := sc.Bytes()
		if strings.TrimSpace(string(data)) == "" {
			continue
		}
		if err := fn(data); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Tally counts followed instructions.
type Tally struct {
	Total    int `json:"total"`
	Followed int `json:"followed"`
}

// Accuracy is Followed/Total, or 0 for an empty tally.
func (t Tally) Accuracy() float64 {
	if t.Total == 0 {
		return 0
	}
	return float64(t.Followed) / float64(t.Total)
}

// Scores are the accuracies of one evaluation mode (strict or loose), as
// evaluation_lib.print_report computes them.
type Scores struct {
	// Prompt counts prompts whose instructions were all followed.
	Prompt Tally `json:"prompt"`
	// Instruction counts single instructions followed.
	Instruction Tally `json:"instruction"`
	// ByCategory tallies instructions by the id's prefix before ':'
	// ("keywords", "detectable_format", ...).
	ByCategory map[string]Tally `json:"by_category"`
	// ByInstruction tallies instructions by full id.
	ByInstruction map[string]Tally `json:"by_instruction"`
}

// PromptAccuracy is the prompt-level accuracy.
func (s Scores) PromptAccuracy() float64 { return s.Prompt.Accuracy() }

// InstructionAccuracy is the instruction-level accuracy.
func (s Scores) InstructionAccuracy() float64 { return s.Instruction.Accuracy() }

func (s *Scores) add(ids []string, followed []bool) {
	s.Prompt.Total++
	all := true
	for i, id := range ids {
		cat, _, _ := strings.Cut(id, ":")
		c, t := s.ByCategory[cat], s.ByInstruction[id]
		c.Total++
		t.Total++
		s.Instruction.Total++
		if followed[i] {
			c.Followed++
			t.Followed++
			s.Instruction.Followed++
		} else {
			all = false
		}
		s.ByCategory[cat], s.ByInstruction[id] = c, t
	}
	if all {
		s.Prompt.Followed++
	}
}

// PromptResult is the outcome for one prompt (the reference's
// OutputExample, for both modes).
type PromptResult struct {
	Key            int      `json:"key"`
	Prompt         string   `json:"prompt"`
	Response       string   `json:"response"`
	InstructionIDs []string `json:"instruction_id_list"`
	// Strict and Loose hold one verdict per instruction.
	Strict []bool `json:"follow_instruction_list_strict"`
	Loose  []bool `json:"follow_instruction_list_loose"`
	// FollowAllStrict and FollowAllLoose are the prompt-level verdicts.
	FollowAllStrict bool `json:"follow_all_instructions_strict"`
	FollowAllLoose  bool `json:"follow_all_instructions_loose"`
}

// Report is the result of Evaluate.
type Report struct {
	Strict  Scores         `json:"strict"`
	Loose   Scores         `json:"loose"`
	Prompts []PromptResult `json:"prompts"`
}

// Evaluate scores responses against inputs in strict and loose mode, as
// evaluation_main does. Each input's response is found by its prompt text;
// when several responses share a prompt the last one wins. A missing
// response, an unknown instruction id or invalid kwargs is an error.
func Evaluate(inputs []Input, responses []Response) (Report, error) {
	byPrompt := make(map[string]string, len(responses))
	for _, r := range responses {
		byPrompt[r.Prompt] = r.Response
	}
	rep := Report{
		Strict:  Scores{ByCategory: map[string]Tally{}, ByInstruction: map[string]Tally{}},
		Loose:   Scores{ByCategory: map[string]Tally{}, ByInstruction: map[string]Tally{}},
		Prompts: make([]PromptResult, 0, len(inputs)),
	}
	for _, in := range inputs {
		resp, ok := byPrompt[in.Prompt]
		if !ok {
			return Report{}, fmt.Errorf("ifeval.Evaluate: key %d: no response for its prompt", in.Key)
		}
		if len(in.Kwargs) != len(in.InstructionIDs) {
			return Report{}, fmt.Errorf("ifeval.Evaluate: key %d: %d instruction ids but %d kwargs", in.Key, len(in.InstructionIDs), len(in.Kwargs))
		}
		pr := PromptResult{
			Key:             in.Key,
			Prompt:          in.Prompt,
			Response:        resp,
			InstructionIDs:  in.InstructionIDs,
			Strict:          make([]bool, len(in.InstructionIDs)),
			Loose:           make([]bool, len(in.InstructionIDs)),
			FollowAllStrict: true,
			FollowAllLoose:  true,
		}
		variants := LooseVariants(resp)
		for i, id := range in.InstructionIDs {
			ins, err := Build(id, in.Kwargs[i])
			if err != nil {
				return Report{}, fmt.Errorf("ifeval.Evaluate: key %d: %w", in.Key, err)
			}
			pr.Strict[i] = CheckStrict(ins, resp)
			for _, v := range variants {
				if CheckStrict(ins, v) {
					pr.Loose[i] = true
					break
				}
			}
			pr.FollowAllStrict = pr.FollowAllStrict && pr.Strict[i]
			pr.FollowAllLoose = pr.FollowAllLoose && pr.Loose[i]
		}
		rep.Strict.add(in.InstructionIDs, pr.Strict)
		rep.Loose.add(in.InstructionIDs, pr.Loose)
		rep.Prompts = append(rep.Prompts, pr)
	}
	return rep, nil
}
