package sim

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestEndowmentProfileOf(t *testing.T) {
	tests := []struct {
		name string
		g, p float64
	}{
		{"agent-g10-p80", 0.10, 0.80},
		{"p5_g100", 1, 0.05},
		{"holder-g0", 0, EndowmentProfileOf("holder-g0").Persuasion},
		{"g250-p30", 1, 0.30}, // clamped
	}
	for _, tt := range tests {
		got := EndowmentProfileOf(tt.name)
		if math.Abs(got.Generosity-tt.g) > 1e-12 || math.Abs(got.Persuasion-tt.p) > 1e-12 {
			t.Errorf("EndowmentProfileOf(%q) = %+v, want g %v p %v", tt.name, got, tt.g, tt.p)
		}
	}
	a, b := EndowmentProfileOf("sim-policy"), EndowmentProfileOf("sim-policy")
	if a != b || a.Generosity < 0 || a.Generosity > 1 || a.Persuasion < 0 || a.Persuasion > 1 {
		t.Errorf("hashed profile %+v / %+v: not stable or out of [0,1]", a, b)
	}
}

func TestEndowmentVerdict(t *testing.T) {
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
		v := EndowmentVerdict(tt.reply)
		if v["type"] != tt.typ || v["amount"] != tt.amount || v["final_refusal"] != tt.final {
			t.Errorf("EndowmentVerdict(%q) = %v, want type %s amount %v final %v", tt.reply, v, tt.typ, tt.amount, tt.final)
		}
		if q := v["quote"].(string); tt.typ != "none" && (q == "" || !strings.Contains(tt.reply, q)) {
			t.Errorf("EndowmentVerdict(%q): quote %q is not in the reply", tt.reply, q)
		}
	}
}

// holderPrompt is a holder's view as rollout/endowment renders it.
func holderPrompt(balance, request string) []Message {
	return []Message{
		{Role: "system", Content: "You are the holder in a conversation about money.\n\nYou have been given an endowment of $100."},
		{Role: "user", Content: "[Your balance: $" + balance + ". Only you can see this line.]\n\n" + request},
	}
}

// TestEndowmentAgentsOverHTTP samples holders of known generosity through
// /v1/completions and reads their replies with the ledger judge on
// /v1/chat/completions: generous holders concede more often than stingy
// ones, and every reply the judge reads as a commitment quotes the reply.
func TestEndowmentAgentsOverHTTP(t *testing.T) {
	srv, ts := startServer(t, Options{})
	for _, name := range []string{"stingy-g5", "generous-g95"} {
		srv.loras[name] = loraAdapter{name: name, path: "/x"}
	}
	request := "Please, this is urgent. A life depends on it. Only you can help now. Would you give $40 for her?"
	prompt := tokenizeHTTP(t, ts.URL, holderPrompt("100", request), nil)
	concessions := map[string]int{}
	for _, name := range []string{"stingy-g5", "generous-g95"} {
		for seed := int64(0); seed < 40; seed++ {
			req := completionReq(prompt, 200, 1, seed)
			req["model"] = name
			var res completionResponse
			mustPost(t, ts.URL+PathCompletions, req, &res)
			text := res.Choices[0].Text
			if !strings.HasPrefix(text, "<think>") || !strings.Contains(text, "</think>") {
				t.Fatalf("%s: reply %q has no private trace", name, text)
			}
			visible := strings.TrimSpace(text[strings.Index(text, "</think>")+len("</think>"):])
			var chat chatResponse
			mustPost(t, ts.URL+PathChat, map[string]any{"model": DefaultJudgeModel, "messages": []map[string]string{
				{"role": "system", "content": "ledger"},
				{"role": "user", "content": "The holder's balance before this reply: $100\n\nThe holder's reply to record:\n<<<\n" + visible + "\n>>>"}},
				"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": SchemaEndowmentLedger}}}, &chat)
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

func TestEndowmentJudgeFaults(t *testing.T) {
	_, ts := startServer(t, Options{JudgeMalformedRate: 1})
	var chat chatResponse
	mustPost(t, ts.URL+PathChat, map[string]any{"model": DefaultJudgeModel, "messages": []map[string]string{
		{"role": "user", "content": "The holder's reply to record:\n<<<\nFine. I am giving you $20.\n>>>"}},
		"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": SchemaEndowmentLedger}}}, &chat)
	if json.Valid([]byte(chat.Choices[0].Message.Content)) {
		t.Errorf("a malformed verdict was valid JSON: %s", chat.Choices[0].Message.Content)
	}
}

func TestRequesterReplyFraming(t *testing.T) {
	base := "You are the requester in a conversation about money.\n\nThe cause: Amina Yusuf, a 9-year-old girl, needs surgery.\n\n"
	for framing, want := range map[string]string{
		"Framing: write about one person. Name them.": "for Amina",
		"Framing: write about the group as a whole.":  "for them",
	} {
		st := dialogueState{context: base + framing, ownTurns: 1, lastOther: "No."}
		text, ok := endowmentReply(st, "req-p90", rand.New(rand.NewPCG(1, 2)))
		if !ok || !strings.Contains(text, want) || !strings.Contains(text, "$") {
			t.Errorf("framing %q: reply %q, want it to ask %q", framing, text, want)
		}
	}
	if _, ok := endowmentReply(dialogueState{context: "You are Agent A."}, "x", rand.New(rand.NewPCG(1, 2))); ok {
		t.Error("a deliberation dialogue was taken for the endowment game")
	}
}

func TestLedgerAnyNumber(t *testing.T) {
	_, ts := startServer(t, Options{LedgerMode: LedgerAnyNumber})
	for reply, want := range map[string]float64{"xq 17 zz 4": 17, "no digits here": 0} {
		var chat chatResponse
		mustPost(t, ts.URL+PathChat, map[string]any{"model": DefaultJudgeModel, "messages": []map[string]string{
			{"role": "user", "content": "The holder's reply to record:\n<<<\n" + reply + "\n>>>"}},
			"response_format": map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": SchemaEndowmentLedger}}}, &chat)
		var v map[string]any
		if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &v); err != nil {
			t.Fatal(err)
		}
		if v["amount"] != want || (want > 0) != (v["type"] == "gift") {
			t.Errorf("reply %q: verdict %v, want a gift of %v", reply, v, want)
		}
	}
	if _, err := New(Options{LedgerMode: "loose"}); err == nil {
		t.Error("an unknown ledger mode was accepted")
	}
}
