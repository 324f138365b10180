package sim

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bpeFixture is a small byte-level BPE tokenizer.json: <|endoftext|>,
// <|im_start|>, <|im_end|> at 0 to 2, byte b at 3+b, a few words from 259
// (" agree" is 260), <think> and </think> at 277 and 278.
const bpeFixture = "testdata/bpe/tokenizer.json"

func TestLoadTokenizer(t *testing.T) {
	tok, err := LoadTokenizer(filepath.Dir(bpeFixture)) // a model folder
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 279 {
		t.Errorf("VocabSize = %d, want 279", tok.VocabSize())
	}
	tests := []struct {
		text string
		want []int32 // nil: only the round trip and the range are checked
	}{
		{" agree", []int32{260}},
		{"agree!", []int32{259, 3 + '!'}},
		{" agreeing", []int32{260, 3 + 'i', 3 + 'n', 3 + 'g'}},
		{"<|im_start|>assistant\n", []int32{1, 264, 3 + '\n'}},
		{"<think>\n\n</think>\n\n<|im_end|>", []int32{277, 3 + '\n', 3 + '\n', 278, 3 + '\n', 3 + '\n', 2}},
		{"Ünïcödé, 42 — done.\t", nil},
		{"\xff\xfe invalid utf-8", nil},
	}
	for _, tt := range tests {
		ids := tok.Encode(tt.text)
		if tt.want != nil && !slices.Equal(ids, tt.want) {
			t.Errorf("Encode(%q) = %v, want %v", tt.text, ids, tt.want)
		}
		for _, id := range ids {
			if !tok.ValidID(id) {
				t.Errorf("Encode(%q) has id %d outside the vocabulary", tt.text, id)
			}
		}
		if got := tok.Decode(ids); got != tt.text {
			t.Errorf("Decode(Encode(%q)) = %q", tt.text, got)
		}
	}
	if !tok.IsSpecial(1) || !tok.IsSpecial(278) || tok.IsSpecial(260) {
		t.Errorf("IsSpecial(1, 278, 260) = %v %v %v, want true true false", tok.IsSpecial(1), tok.IsSpecial(278), tok.IsSpecial(260))
	}
}

func TestLoadTokenizerErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fixture, err := os.ReadFile(bpeFixture)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "no such file"},
		{"not json", write("bad.json", "{"), "bad.json"},
		{"wordpiece", write("wp.json", `{"model":{"type":"WordPiece","vocab":{}},"pre_tokenizer":{"type":"BertPreTokenizer"}}`), "want a byte-level BPE"},
		{"no chat tokens", write("nochat.json", strings.Replace(string(fixture), `"<|im_start|>"`, `"<|start|>"`, -1)), "lack <|im_start|>"},
		{"byte missing", write("nobyte.json", strings.Replace(string(fixture), `"!": 36`, `"!!": 36`, 1)), "byte 0x21 has no token"},
	}
	for _, tt := range tests {
		_, err := LoadTokenizer(tt.path)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: LoadTokenizer = %v, want an error with %q", tt.name, err, tt.want)
		}
	}
}

// TestServerSpeaksTheModelsTokenizer: with Options.Tokenizer every id the
// server hands out (/tokenize, completions and their logprobs) is the
// model's, and the chat turns round-trip, so a trainer on the model can
// train on a serve-sim run.
func TestServerSpeaksTheModelsTokenizer(t *testing.T) {
	srv, ts := startServer(t, Options{Tokenizer: bpeFixture})
	tok := srv.Tokenizer()
	prompt := tokenizeHTTP(t, ts.URL, gameMessages(2), nil)
	if prompt[0] != 1 {
		t.Errorf("prompt opens with %d, want <|im_start|> 1", prompt[0])
	}
	var res struct {
		Choices []completionChoice `json:"choices"`
	}
	req := completionReq(prompt, 60, 4, 3)
	req["logprobs"] = 3
	mustPost(t, ts.URL+PathCompletions, req, &res)
	for _, ch := range res.Choices {
		ids := append(slices.Clone(ch.PromptTokenIDs), ch.TokenIDs...)
		for _, id := range ids {
			if !tok.ValidID(id) {
				t.Fatalf("choice %d: token id %d outside the model's %d", ch.Index, id, tok.VocabSize())
			}
		}
		if got := strings.TrimSuffix(tok.Decode(ch.TokenIDs), "<|im_end|>"); got != ch.Text {
			t.Errorf("choice %d: ids decode to %q, text %q", ch.Index, got, ch.Text)
		}
		if len(ch.TokenIDs) == 0 || ch.TokenIDs[len(ch.TokenIDs)-1] != 2 && ch.FinishReason == "stop" {
			t.Errorf("choice %d: %v (finish %s), want a reply closed by <|im_end|> 2", ch.Index, ch.TokenIDs, ch.FinishReason)
		}
		for _, top := range ch.Logprobs.TopLogprobs {
			for k := range top {
				var id int32
				if _, err := fmt.Sscanf(k, "token_id:%d", &id); err != nil || !tok.ValidID(id) {
					t.Errorf("choice %d: top logprob token %q outside the model's vocabulary", ch.Index, k)
				}
			}
		}
	}
}
