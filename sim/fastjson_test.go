package sim

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

func TestExtractIntArray(t *testing.T) {
	tests := []struct {
		body string
		want []int32
		ok   bool
	}{
		{`{"prompt":[1,2,3]}`, []int32{1, 2, 3}, true},
		{` { "model" : "m", "prompt" : [ 0 , -5,151645 ] , "n": 2 } `, []int32{0, -5, 151645}, true},
		{`{"stop":["\"prompt\": [9]"],"nested":{"prompt":[7]},"prompt":[4]}`, []int32{4}, true},
		{`{"prompt":[]}`, []int32{}, true},
		{`{"prompt":"text"}`, nil, false},
		{`{"prompt":[[1,2],[3]]}`, nil, false},
		{`{"prompt":[1.5]}`, nil, false},
		{`{"prompt":[01]}`, nil, false},
		{`{"prompt":[99999999999]}`, nil, false},
		{`{"prompt":[1,]}`, nil, false},
		{`{"model":"m"}`, nil, false},
		{`[1,2]`, nil, false},
		{`{"prompt":[1,2`, nil, false},
		{`{"a":"unterminated`, nil, false},
	}
	for _, tt := range tests {
		ids, rest, ok := extractIntArray([]byte(tt.body), "prompt")
		if ok != tt.ok || !slices.Equal(ids, tt.want) {
			t.Errorf("extractIntArray(%q) = %v, %v, want %v, %v", tt.body, ids, ok, tt.want, tt.ok)
			continue
		}
		if ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(rest, &m); err != nil || string(m["prompt"]) != "null" {
				t.Errorf("extractIntArray(%q) rest = %q (%v), want valid JSON with prompt null", tt.body, rest, err)
			}
		}
	}
}

func TestFastPromptMatchesSlowPath(t *testing.T) {
	_, ts := startServer(t, Options{})
	bodies := []string{
		`{"prompt":[1,2,3],"max_tokens":5,"seed":1,"return_token_ids":true}`,
		`{"prompt": [ 1, 2, 3 ] , "max_tokens":5,"seed":1,"return_token_ids":true}`,
		`{"prompt":[9,9],"prompt":[1,2,3],"max_tokens":5,"seed":1,"return_token_ids":true}`,
		`{"prompt":[[1,2,3]],"max_tokens":5,"seed":1,"return_token_ids":true}`,
	}
	var first []completionChoice
	for i, b := range bodies {
		resp, err := http.Post(ts.URL+PathCompletions, "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("body %s: %d %s", b, resp.StatusCode, raw)
		}
		got := choicesOf(t, raw)
		if i == 0 {
			first = got
			continue
		}
		if !slices.Equal(got[0].PromptTokenIDs, []int32{1, 2, 3}) || !slices.Equal(got[0].TokenIDs, first[0].TokenIDs) {
			t.Errorf("body %s: prompt %v tokens %v, want prompt [1 2 3] and the first body's tokens", b, got[0].PromptTokenIDs, got[0].TokenIDs)
		}
	}
}

func TestMsgContent(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{`"plain"`, "plain"},
		{`"esc\"aped\nline \u00e9"`, "esc\"aped\nline é"},
		{`"naïve 日本"`, "naïve 日本"},
		{`null`, ""},
		{`[{"type":"text","text":"a"},{"type":"image_url"},{"type":"text","text":"b"}]`, "ab"},
	}
	for _, tt := range tests {
		var m struct{ C msgContent }
		if err := json.Unmarshal([]byte(`{"C":`+tt.in+`}`), &m); err != nil || string(m.C) != tt.want {
			t.Errorf("msgContent(%s) = %q, %v, want %q", tt.in, m.C, err, tt.want)
		}
	}
}
