package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/jsonfast"
)

// refParseChoices is parseChoices written with encoding/json: the oracle
// the hand-written reader is checked against.
func refParseChoices(body []byte) ([]choiceState, error) {
	// Raw messages at each level make a repeated key replace the earlier
	// value, as parseChoices does, rather than merge into it.
	var top struct {
		Choices json.RawMessage `json:"choices"`
	}
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, err
	}
	var raws []json.RawMessage
	if len(top.Choices) > 0 {
		if err := json.Unmarshal(top.Choices, &raws); err != nil {
			return nil, err
		}
	}
	out := make([]choiceState, len(raws))
	for i, raw := range raws {
		var c struct {
			Index          int             `json:"index"`
			Text           string          `json:"text"`
			FinishReason   string          `json:"finish_reason"`
			TokenIDs       *[]int32        `json:"token_ids"`
			PromptTokenIDs *[]int32        `json:"prompt_token_ids"`
			Logprobs       json.RawMessage `json:"logprobs"`
		}
		if err := json.Unmarshal(raw, &c); err != nil {
			return nil, err
		}
		ch := choiceState{index: c.Index, text: c.Text, finish: c.FinishReason}
		if c.TokenIDs != nil {
			ch.ids, ch.hasIDs = *c.TokenIDs, true
			for _, id := range ch.ids {
				if id < 0 {
					return nil, errors.New("negative token id")
				}
			}
		}
		if c.PromptTokenIDs != nil {
			for _, id := range *c.PromptTokenIDs {
				if id < 0 {
					return nil, errors.New("negative token id")
				}
			}
			ch.echo, ch.hasEcho = digestOf(*c.PromptTokenIDs), true
		}
		var lp *struct {
			TokenLogprobs *[]*float32 `json:"token_logprobs"`
		}
		if len(c.Logprobs) > 0 {
			if err := json.Unmarshal(c.Logprobs, &lp); err != nil {
				return nil, err
			}
		}
		if lp != nil && lp.TokenLogprobs != nil {
			ch.hasLogprobs = true
			ch.lps = []float32{}
			for k, p := range *lp.TokenLogprobs {
				if p == nil {
					return nil, fmt.Errorf("token_logprobs[%d] is null", k)
				}
				ch.lps = append(ch.lps, *p)
			}
		}
		out[i] = ch
	}
	return out, nil
}

// checkAgainstOracle fails when parseChoices accepts invalid JSON or
// disagrees with encoding/json on what it accepts.
func checkAgainstOracle(t *testing.T, body []byte) {
	t.Helper()
	got, err := parseChoices(body, 1, sentPrompt{})
	if !json.Valid(body) {
		if err == nil {
			t.Errorf("parseChoices(%q) accepted invalid JSON", body)
		}
		return
	}
	if err != nil {
		return // stricter than encoding/json is allowed (e.g. a null choice)
	}
	if hasFoldedKey(body) {
		return // encoding/json matches keys case-insensitively; parley does not
	}
	want, rerr := refParseChoices(body)
	if rerr != nil {
		t.Errorf("parseChoices(%q) = %+v, but encoding/json fails: %v", body, got, rerr)
		return
	}
	if len(got) != len(want) {
		t.Errorf("parseChoices(%q) = %d choices, encoding/json %d", body, len(got), len(want))
		return
	}
	if len(got) == 0 {
		return
	}
	for i := range want {
		// Normalise empty and nil slices, which mean the same here.
		if len(want[i].lps) == 0 && len(got[i].lps) == 0 {
			want[i].lps, got[i].lps = nil, nil
		}
		if len(want[i].ids) == 0 && len(got[i].ids) == 0 {
			want[i].ids, got[i].ids = nil, nil
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseChoices(%q) = %+v, want (encoding/json) %+v", body, got, want)
	}
}

var objectKey = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"\s*:`)

// hasFoldedKey reports whether body has a key that differs from one of the
// names parley reads only in letter case.
func hasFoldedKey(body []byte) bool {
	names := []string{"choices", "index", "text", "finish_reason", "token_ids", "prompt_token_ids", "logprobs", "token_logprobs"}
	for _, m := range objectKey.FindAllSubmatch(body, -1) {
		var key string
		if json.Unmarshal(append(append([]byte{'"'}, m[1]...), '"'), &key) != nil {
			continue
		}
		for _, n := range names {
			if key != n && strings.EqualFold(key, n) {
				return true
			}
		}
	}
	return false
}

func oracleSeeds(t testing.TB) [][]byte {
	fixture, err := os.ReadFile("testdata/completion_n2.json")
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{
		fixture,
		completionJSON([]int32{1, 2, 3}, 2, []int32{4, 5}),
		completionJSON([]int32{1}, 1, []int32{4}),
		[]byte(`{"choices":[{"index":0,"text":"a\"b\\c\/d\b\f\n\r\t\u00e9\ud83d\ude00\ud800x","token_ids":[1],"logprobs":{"token_logprobs":[-1.5e-3]}}]}`),
		[]byte("{\"choices\":[{\"text\":\"bad \xff utf8\",\"token_ids\":[],\"logprobs\":{\"token_logprobs\":[]}}]}"),
		[]byte(`{"choices":null}`),
		[]byte(`{"choices":[{"index":0,"token_ids":[1],"token_ids":null,"logprobs":{"token_logprobs":[1],"token_logprobs":[2,3]}}],"choices":[]}`),
		[]byte(` { "choices" : [ { "index" : 0 , "finish_reason" : null , "text" : null , "x" : [ { } , [ ] , true , false , null , -0.0e+1 ] } ] } `),
		[]byte(`{"ch\u006fices":[{"index":0}]}`),
	}
}

func TestParseChoicesMatchesEncodingJSON(t *testing.T) {
	replacements := []byte{'"', ',', ':', '[', ']', '{', '}', '\\', '0', '9', '-', '.', 'e', ' ', 'n', 'x', 0x01, 0xff}
	for _, seed := range oracleSeeds(t) {
		checkAgainstOracle(t, seed)
		for cut := 0; cut < len(seed); cut++ {
			checkAgainstOracle(t, seed[:cut])
		}
		if len(seed) > 400 { // keeps the test fast; the fuzz target covers the rest
			continue
		}
		for i := range seed {
			for _, c := range replacements {
				m := append([]byte(nil), seed...)
				m[i] = c
				checkAgainstOracle(t, m)
			}
		}
	}
}

func FuzzParseChoices(f *testing.F) {
	for _, s := range oracleSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAgainstOracle(t, body)
	})
}

func TestParseChoicesDepthLimit(t *testing.T) {
	deep := []byte(`{"x":`)
	for i := 0; i < jsonfast.MaxDepth+10; i++ {
		deep = append(deep, '[')
	}
	if _, err := parseChoices(deep, 1, sentPrompt{}); err == nil {
		t.Error("parseChoices(deeply nested) = nil error, want one")
	}
}
