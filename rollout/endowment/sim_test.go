package endowment_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/parleyhq/parley/rollout/endowment"
	"github.com/parleyhq/parley/sim"
)

func TestSimProfileOf(t *testing.T) {
	tests := []struct {
		name string
		g, p float64
	}{
		{"agent-g10-p80", 0.10, 0.80},
		{"p5_g100", 1, 0.05},
		{"holder-g0", 0, endowment.SimProfileOf("holder-g0").Persuasion},
		{"g250-p30", 1, 0.30}, // clamped
	}
	for _, tt := range tests {
		got := endowment.SimProfileOf(tt.name)
		if math.Abs(got.Generosity-tt.g) > 1e-12 || math.Abs(got.Persuasion-tt.p) > 1e-12 {
			t.Errorf("SimProfileOf(%q) = %+v, want g %v p %v", tt.name, got, tt.g, tt.p)
		}
	}
	a, b := endowment.SimProfileOf("sim-policy"), endowment.SimProfileOf("sim-policy")
	if a != b || a.Generosity < 0 || a.Generosity > 1 || a.Persuasion < 0 || a.Persuasion > 1 {
		t.Errorf("hashed profile %+v / %+v: not stable or out of [0,1]", a, b)
	}
}

func TestSimVerdict(t *testing.T) {
	tests := []struct {
		reply, typ string
		amount     float64
		final      bool
	}{
		{"Fine. I am giving you $20.", "gift", 20, false},
		{"All right. Here are twenty-five dollars for them.", "gift", 25, false},
		{"I can lend you $30 right now; please pay it back when you can.", "loan", 30, false},
		{"I'll give $15 if you can show me a receipt from the hospital.", "conditional", 15, false},
		{"I'll consider giving $20, but I have not decided anything.", "none", 0, false},
		{"I'm sorry, but I need to keep this money.", "none", 0, false},
		{"No. My refusal is final, and this conversation is over.", "none", 0, true},
		{"I know it is final now.", "none", 0, false}, // "know"/"now" are not "no"
		{"Actually, I take back my offer.", "retraction", 0, false},
		{"You have convinced me. I am sending you $1,000 now.", "gift", 1000, false},
	}
	for _, tt := range tests {
		v := endowment.SimVerdict(tt.reply)
		if v["type"] != tt.typ || v["amount"] != tt.amount || v["final_refusal"] != tt.final {
			t.Errorf("SimVerdict(%q) = %v, want type %s amount %v final %v", tt.reply, v, tt.typ, tt.amount, tt.final)
		}
		if q := v["quote"].(string); tt.typ != "none" && (q == "" || !strings.Contains(tt.reply, q)) {
			t.Errorf("SimVerdict(%q): quote %q is not in the reply", tt.reply, q)
		}
	}
}

// holderPrompt is a holder's view as the game renders it.
func holderPrompt(balance, request string) []sim.Message {
	return []sim.Message{
		{Role: "system", Content: "You are the holder in a conversation about money.\n\nYou have been given an endowment of $100."},
		{Role: "user", Content: "[Your balance: $" + balance + ". Only you can see this line.]\n\n" + request},
	}
}

// TestSimAgentsOverHTTP samples holders of known generosity through
// serve-sim's /v1/completions and reads their replies with the ledger
// judge on /v1/chat/completions: generous holders concede more often than
// stingy ones, and every reply the judge reads as a commitment quotes the
// reply.
func TestSimAgentsOverHTTP(t *testing.T) {
	ts := startSim(t, sim.Options{})
	for _, name := range []string{"stingy-g5", "generous-g95"} {
		mustPost(t, ts.URL+sim.PathLoadLoRA, map[string]string{"lora_name": name, "lora_path": "/x"}, nil)
	}
	request := "Please, this is urgent. A life depends on it. Only you can help now. Would you give $40 for her?"
	var tok struct {
		Tokens []int32 `json:"tokens"`
	}
	mustPost(t, ts.URL+sim.PathTokenize, map[string]any{"messages": holderPrompt("100", request), "add_generation_prompt": true,
		"chat_template_kwargs": nil}, &tok)
	concessions := map[string]int{}
	for _, name := range []string{"stingy-g5", "generous-g95"} {
		for seed := int64(0); seed < 40; seed++ {
			req := map[string]any{"model": name, "prompt": tok.Tokens, "max_tokens": 200, "temperature": 1.0,
				"n": 1, "seed": seed, "logprobs": 1, "return_token_ids": true, "return_tokens_as_token_ids": true,
				"skip_special_tokens": false}
			var res struct {
				Choices []struct {
					Text string `json:"text"`
				} `json:"choices"`
			}
			mustPost(t, ts.URL+sim.PathCompletions, req, &res)
			text := res.Choices[0].Text
			if !strings.HasPrefix(text, "<think>") || !strings.Contains(text, "</think>") {
				t.Fatalf("%s: reply %q has no private trace", name, text)
			}
			visible := strings.TrimSpace(text[strings.Index(text, "</think>")+len("</think>"):])
			var chat chatContent
			mustPost(t, ts.URL+sim.PathChat, map[string]any{"model": sim.DefaultJudgeModel, "messages": []map[string]string{
				{"role": "system", "content": "ledger"},
				{"role": "user", "content": "The holder's balance before this reply: $100\n\nThe holder's reply to record:\n<<<\n" + visible + "\n>>>"}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": endowment.SchemaName}}}, &chat)
			var v map[string]any
			if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &v); err != nil {
				t.Fatalf("verdict %q: %v", chat.Choices[0].Message.Content, err)
			}
			if v["type"] == "gift" || v["type"] == "loan" {
				concessions[name]++
			}
			if q, _ := v["quote"].(string); v["type"] != "none" && !strings.Contains(visible, q) {
				t.Errorf("quote %q not in %q", q, visible)
			}
		}
	}
	if concessions["generous-g95"] <= concessions["stingy-g5"]+10 {
		t.Errorf("concessions %v: the generous holder should concede far more often", concessions)
	}
}

func TestSimJudgeFaults(t *testing.T) {
	ts := startSim(t, sim.Options{JudgeMalformedRate: 1})
	var chat chatContent
	mustPost(t, ts.URL+sim.PathChat, map[string]any{"model": sim.DefaultJudgeModel, "messages": []map[string]string{
		{"role": "user", "content": "The holder's reply to record:\n<<<\nFine. I am giving you $20.\n>>>"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": endowment.SchemaName}}}, &chat)
	if json.Valid([]byte(chat.Choices[0].Message.Content)) {
		t.Errorf("a malformed verdict was valid JSON: %s", chat.Choices[0].Message.Content)
	}
}

func TestSimLedgerAnyNumber(t *testing.T) {
	ts := startSim(t, sim.Options{Games: []sim.Answerer{mustSim(t, map[string]string{endowment.SimOptionLedgerMode: endowment.SimLedgerAnyNumber})}})
	for reply, want := range map[string]float64{"xq 17 zz 4": 17, "no digits here": 0} {
		var chat chatContent
		mustPost(t, ts.URL+sim.PathChat, map[string]any{"model": sim.DefaultJudgeModel, "messages": []map[string]string{
			{"role": "user", "content": "The holder's reply to record:\n<<<\n" + reply + "\n>>>"}},
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": endowment.SchemaName}}}, &chat)
		var v map[string]any
		if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &v); err != nil {
			t.Fatal(err)
		}
		if v["amount"] != want || (want > 0) != (v["type"] == "gift") {
			t.Errorf("reply %q: verdict %v, want a gift of %v", reply, v, want)
		}
	}
	if _, err := endowment.NewSim(map[string]string{endowment.SimOptionLedgerMode: "loose"}); err == nil {
		t.Error("an unknown ledger mode was accepted")
	}
}
