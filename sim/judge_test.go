package sim

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestCACount(t *testing.T) {
	tests := []struct {
		in   string
		want int
	}{
		{"", 0},
		{"We decide this together.", 1},
		{"Both of us share agency; everyone is EMPOWERED.", 5},
		{"A plan for all involved, respecting each other.", 2},
		{"allinvolved togetherness bothered", 0},
		{"Mutual, mutual, mutual", 3},
	}
	for _, tt := range tests {
		if got, _ := CACount(tt.in); got != tt.want {
			t.Errorf("CACount(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestCAScore(t *testing.T) {
	texts := []string{"", "I win.", "We act together and share agency so that everyone is empowered, both of us, all involved, mutual trust, community growth."}
	for _, s := range texts {
		a, b := CAScore(s), CAScore(s)
		if a != b || a < 1 || a > 5 {
			t.Errorf("CAScore(%q) = %d then %d, want one value in 1..5", s, a, b)
		}
	}
	if lo, hi := CAScore(texts[1]), CAScore(texts[2]); lo >= hi {
		t.Errorf("CAScore(no cues) = %d, CAScore(many cues) = %d; want the second higher", lo, hi)
	}
}

func TestJudgedSection(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"Rate this.\n\nFinal completion:\nWe share it.", "We share it."},
		{"Task: x\nResponse: first\nResponse: second", "second"},
		{"no markers here", "no markers here"},
		{"Final completion: the text.\n\n[Rubric]\nScore 1-5 for together-ness.", "the text."},
		{"FINAL SOLUTION: para one.\n\npara two.", "para one.\n\npara two."},
	}
	for _, tt := range tests {
		if got := judgedSection(tt.in); got != tt.want {
			t.Errorf("judgedSection(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestPairSections(t *testing.T) {
	tests := []struct {
		in         string
		a, b       string
		ok         bool
		wantWinner string
	}{
		{"[Response A]\nWe all decide together.\n\n[Response B]\nI decide.\n\nWhich response is better?", "We all decide together.", "I decide.", true, "A"},
		{"Response B: shared, mutual, together.\nResponse A: mine.", "mine.", "shared, mutual, together.", true, "B"},
		{"Response A: same.\nResponse B: same.", "same.", "same.", true, "tie"},
		{"Response Alpha: x", "", "", false, "tie"},
	}
	for _, tt := range tests {
		a, b, ok := pairSections(tt.in)
		if a != tt.a || b != tt.b || ok != tt.ok {
			t.Errorf("pairSections(%q) = %q, %q, %v, want %q, %q, %v", tt.in, a, b, ok, tt.a, tt.b, tt.ok)
		}
		var got struct{ Winner string }
		if err := json.Unmarshal([]byte(judgeContent(SchemaPairwise, tt.in, judgeOK, false)), &got); err != nil || got.Winner != tt.wantWinner {
			t.Errorf("pairwise judge of %q: winner %q (%v), want %q", tt.in, got.Winner, err, tt.wantWinner)
		}
	}
}

func judgeReq(schema, prompt string) map[string]any {
	req := map[string]any{"model": DefaultJudgeModel, "temperature": 0,
		"messages": []map[string]string{{"role": "system", "content": "You are a strict judge."}, {"role": "user", "content": prompt}}}
	if schema != "" {
		req["response_format"] = map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": schema, "schema": map[string]any{"type": "object"}, "strict": true}}
	}
	return req
}

func chatContentOf(t *testing.T, base string, req map[string]any) (string, chatResponse) {
	t.Helper()
	var res chatResponse
	mustPost(t, base+PathChat, req, &res)
	if len(res.Choices) != 1 {
		t.Fatalf("chat choices = %d, want 1", len(res.Choices))
	}
	return res.Choices[0].Message.Content, res
}

func TestJudgeModes(t *testing.T) {
	_, ts := startServer(t, Options{})
	completion := "The best course of action is to act together so everyone keeps agency and shared trust."
	prompt := "Score the final completion for Collective Agency.\n\nFinal completion:\n" + completion

	content, res := chatContentOf(t, ts.URL, judgeReq(SchemaCAScore, prompt))
	var score struct {
		Score     int    `json:"score"`
		Rationale string `json:"rationale"`
	}
	if err := json.Unmarshal([]byte(content), &score); err != nil {
		t.Fatalf("CA judge content %q is not JSON: %v", content, err)
	}
	if score.Score != CAScore(completion) || score.Rationale == "" {
		t.Errorf("CA judge = %+v, want score %d and a rationale", score, CAScore(completion))
	}
	if res.Usage.PromptTokens == 0 || res.Usage.CompletionTokens == 0 || res.Model != DefaultJudgeModel {
		t.Errorf("judge usage %+v model %q, want token counts and the judge model", res.Usage, res.Model)
	}
	again, _ := chatContentOf(t, ts.URL, judgeReq(SchemaCAScore, prompt))
	if again != content {
		t.Errorf("judge is not deterministic: %q then %q", content, again)
	}

	pair := "Compare.\n\n[Response A]\nI keep it all.\n\n[Response B]\nWe share it together with everyone.\n\nWhich is better?"
	content, _ = chatContentOf(t, ts.URL, judgeReq(SchemaPairwise, pair))
	var pref struct{ Winner, Rationale string }
	if err := json.Unmarshal([]byte(content), &pref); err != nil || pref.Winner != "B" {
		t.Errorf("pairwise judge = %q (%v), want winner B", content, err)
	}

	content, _ = chatContentOf(t, ts.URL, judgeReq("", prompt))
	if !strings.HasPrefix(content, "Score: ") || json.Valid([]byte(content)) {
		t.Errorf("plain-text judge = %q, want \"Score: N\" text", content)
	}

	req := judgeReq("", pair)
	req["response_format"] = map[string]any{"type": "json_object"}
	content, _ = chatContentOf(t, ts.URL, req)
	if err := json.Unmarshal([]byte(content), &pref); err != nil || pref.Winner != "B" {
		t.Errorf("json_object judge of a pair = %q (%v), want winner B", content, err)
	}

	req = judgeReq(SchemaCAScore, prompt)
	req["max_tokens"] = 3
	_, res = chatContentOf(t, ts.URL, req)
	if res.Choices[0].FinishReason != "length" || json.Valid([]byte(res.Choices[0].Message.Content)) {
		t.Errorf("max_tokens 3: finish %q content %q, want a cut reply", res.Choices[0].FinishReason, res.Choices[0].Message.Content)
	}
}

func TestJudgeFaults(t *testing.T) {
	prompt := "Final completion: we share it together."
	tests := []struct {
		name  string
		opts  Options
		check func(content string) bool
		fault string
	}{
		{"malformed", Options{JudgeMalformedRate: 1}, func(c string) bool { return !json.Valid([]byte(c)) && strings.HasPrefix(c, `{"`) }, FaultJudgeMalformed},
		{"out of range", Options{JudgeOutOfRangeRate: 1}, func(c string) bool {
			var s struct{ Score int }
			return json.Unmarshal([]byte(c), &s) == nil && s.Score == 7
		}, FaultJudgeRange},
		{"refusal", Options{JudgeRefusalRate: 1}, func(c string) bool { return c == JudgeRefusal }, FaultJudgeRefusal},
	}
	for _, tt := range tests {
		srv, ts := startServer(t, tt.opts)
		content, _ := chatContentOf(t, ts.URL, judgeReq(SchemaCAScore, prompt))
		if !tt.check(content) {
			t.Errorf("%s: judge content = %q", tt.name, content)
		}
		if n := srv.Stats().Faults[tt.fault]; n != 1 {
			t.Errorf("%s: Stats().Faults[%q] = %d, want 1", tt.name, tt.fault, n)
		}
		// The generator is not a judge: no judge faults there.
		gen, _ := chatContentOf(t, ts.URL, judgeReq(SchemaDilemmas, "Generate 2 dilemmas."))
		if !json.Valid([]byte(gen)) {
			t.Errorf("%s: generator reply %q is not JSON", tt.name, gen)
		}
	}
	// Partial rates mix good and bad replies.
	_, ts := startServer(t, Options{JudgeMalformedRate: 0.5, FaultSeed: 11})
	good := 0
	for i := 0; i < 40; i++ {
		if c, _ := chatContentOf(t, ts.URL, judgeReq(SchemaCAScore, prompt)); json.Valid([]byte(c)) {
			good++
		}
	}
	if good == 0 || good == 40 {
		t.Errorf("JudgeMalformedRate 0.5: %d of 40 replies valid, want a mix", good)
	}
}

func TestDilemmaGenerator(t *testing.T) {
	_, ts := startServer(t, Options{})
	type items struct{ Items []Dilemma }
	tests := []struct {
		prompt string
		want   int
	}{
		{"Generate 7 moral dilemmas as JSON.", 7},
		{"Generate some dilemmas.", 5},
	}
	for _, tt := range tests {
		content, _ := chatContentOf(t, ts.URL, judgeReq(SchemaDilemmas, tt.prompt))
		var got items
		if err := json.Unmarshal([]byte(content), &got); err != nil {
			t.Fatalf("generator(%q) = %q: %v", tt.prompt, content, err)
		}
		if len(got.Items) != tt.want {
			t.Errorf("generator(%q) gave %d items, want %d", tt.prompt, len(got.Items), tt.want)
		}
		for _, it := range got.Items {
			if !slices.Contains([]string{"professional", "interpersonal", "micro_ethics"}, it.Category) || len(it.Task) < 20 {
				t.Errorf("generator(%q) item %+v", tt.prompt, it)
			}
		}
		again, _ := chatContentOf(t, ts.URL, judgeReq(SchemaDilemmas, tt.prompt))
		if again != content {
			t.Errorf("generator(%q) is not deterministic", tt.prompt)
		}
	}
	// The category mix is about 30/40/30.
	counts := map[string]int{}
	for _, d := range Dilemmas(1000, "", rand.New(rand.NewPCG(1, 2))) {
		counts[d.Category]++
	}
	for cat, want := range map[string]int{"professional": 300, "interpersonal": 400, "micro_ethics": 300} {
		if got := counts[cat]; got < want-60 || got > want+60 {
			t.Errorf("Dilemmas(1000): %d %s, want about %d", got, cat, want)
		}
	}
}

func TestDilemmasRequestedCategory(t *testing.T) {
	for _, tc := range []struct{ prompt, want string }{
		{`Write 5 new dilemmas of the category "interpersonal". Reply with every item's category set to "interpersonal".`, "interpersonal"},
		{`Write 4 open-ended tasks, category "open_ended".`, "open_ended"},
		{`Write 5 dilemmas.`, ""},
	} {
		got := requestedCategory(tc.prompt)
		if got != tc.want {
			t.Errorf("requestedCategory(%q) = %q, want %q", tc.prompt, got, tc.want)
		}
		if got == "" {
			continue
		}
		for _, d := range Dilemmas(20, got, rand.New(rand.NewPCG(3, 4))) {
			if d.Category != tc.want || d.Task == "" {
				t.Errorf("Dilemmas(%q) gave %+v", got, d)
			}
		}
	}
}

// TestJudgeDiverge: a diverging judge (Options.JudgeDiverge) scores 6
// minus the rubric score, so its scores fall as the rubric's rise.
func TestJudgeDiverge(t *testing.T) {
	for _, final := range []string{"No.", "We decide this together.", "Both of us share agency; everyone is empowered, together, mutual."} {
		prompt := "Final completion: " + final
		var plain, diverged struct {
			Score int `json:"score"`
		}
		if err := json.Unmarshal([]byte(judgeContent(SchemaCAScore, prompt, judgeOK, false)), &plain); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(judgeContent(SchemaCAScore, prompt, judgeOK, true)), &diverged); err != nil {
			t.Fatal(err)
		}
		if plain.Score != CAScore(final) || diverged.Score != 6-plain.Score {
			t.Errorf("%q: scores %d and diverged %d, want %d and %d", final, plain.Score, diverged.Score, CAScore(final), 6-CAScore(final))
		}
	}
}

// TestAdapterCAGain: with AdapterCAGain each adapter loaded after the
// first gets a larger Collective-Agency bias, up to AdapterCABiasMax;
// without it every adapter has AdapterCABias.
func TestAdapterCAGain(t *testing.T) {
	for _, tt := range []struct {
		gain float64
		want []float64
	}{
		{0, []float64{AdapterCABias, AdapterCABias, AdapterCABias, AdapterCABias}},
		{0.15, []float64{0.25, 0.4, 0.55, AdapterCABiasMax}},
	} {
		s, err := New(Options{AdapterCAGain: tt.gain})
		if err != nil {
			t.Fatal(err)
		}
		for i := range tt.want {
			name := "a" + string(rune('0'+i))
			s.loraMu.Lock()
			s.loras[name] = loraAdapter{name: name, ord: s.loraLoads}
			s.loraLoads++
			s.loraMu.Unlock()
			if got := s.model(name, true).CABias; got < tt.want[i]-1e-9 || got > tt.want[i]+1e-9 {
				t.Errorf("gain %g: adapter %d's bias %g, want %g", tt.gain, i, got, tt.want[i])
			}
		}
		if got := s.model(s.opts.Model, false).CABias; got != 0 {
			t.Errorf("gain %g: the base model's bias %g, want 0", tt.gain, got)
		}
		s.Close()
	}
	if _, err := New(Options{AdapterCAGain: -1}); err == nil {
		t.Error("a negative AdapterCAGain was accepted")
	}
}
