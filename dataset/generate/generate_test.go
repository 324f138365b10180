package generate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/sim"
)

// simThreshold is the near-duplicate threshold of the runs against
// serve-sim: its dilemmas are templates whose variants differ in one slot
// (a similarity of about 0.75 to 0.8), and it has too few clusters of them
// below the default 0.7 to fill an interpersonal share of 40.
const simThreshold = 0.85

// simOptions are the options of a run of n prompts against serve-sim.
func simOptions(n int, seed int64) Options {
	return Options{N: n, Seed: seed, EvalFraction: 0.1, NearDupThreshold: simThreshold, Concurrency: 4}
}

// checkOutput checks invariants every output must hold: unique ids and
// texts, no near-duplicates at the threshold, every prompt of valid form
// and length, split set, personas present for dilemmas.
func checkOutput(t *testing.T, kind string, rows []dataset.Prompt, threshold float64) {
	t.Helper()
	ids := map[string]bool{}
	x := NewIndex(threshold)
	for _, p := range rows {
		if ids[p.ID] {
			t.Errorf("duplicate id %q", p.ID)
		}
		ids[p.ID] = true
		if m := x.Check(p.Task); m.Reason != "" {
			t.Errorf("prompt %s is a %s of %q: %q", p.ID, m.Reason, m.Similar, p.Task)
		}
		x.Add(p.Task)
		if err := CheckForm(kind, p.Task); err != nil {
			t.Errorf("prompt %s: CheckForm = %v", p.ID, err)
		}
		if err := CheckLength(p.Task, DefaultMinWords, DefaultMaxWords); err != nil {
			t.Errorf("prompt %s: CheckLength = %v", p.ID, err)
		}
		if p.Split != "train" && p.Split != "eval" {
			t.Errorf("prompt %s: split %q, want train or eval", p.ID, p.Split)
		}
		hasPersonas := p.Persona("A") != "" && p.Persona("B") != ""
		if hasPersonas != (kind == KindDilemmas) {
			t.Errorf("prompt %s (%s): personas %q / %q", p.ID, kind, p.Persona("A"), p.Persona("B"))
		}
	}
}

func countBy(rows []dataset.Prompt, key func(dataset.Prompt) string) map[string]int {
	m := map[string]int{}
	for _, p := range rows {
		m[key(p)]++
	}
	return m
}

func TestMixFromSim(t *testing.T) {
	var out memSink
	st := generateT(t, newSimClient(t), simOptions(100, 1), &out)
	if len(out.rows) != 100 || st.Accepted != 100 {
		t.Fatalf("Generate wrote %d prompts (stats %+v), want 100", len(out.rows), st)
	}
	checkOutput(t, KindDilemmas, out.rows, simThreshold)
	byCat := countBy(out.rows, func(p dataset.Prompt) string { return p.Category })
	for cat, w := range DefaultMix() {
		if got := byCat[cat]; math.Abs(float64(got)-100*w) > 1 {
			t.Errorf("category %s: %d prompts of 100, want %v ± 1", cat, got, 100*w)
		}
		if st.ByCategory[cat] != byCat[cat] {
			t.Errorf("Stats.ByCategory[%s] = %d, want %d", cat, st.ByCategory[cat], byCat[cat])
		}
	}
	// serve-sim writes the category asked for but repeats itself: the
	// duplicates must have been counted.
	if st.Rejected[ReasonDuplicate]+st.Rejected[ReasonNearDuplicate] == 0 {
		t.Errorf("Stats.Rejected = %v, want duplicates counted", st.Rejected)
	}
	rejected := 0
	for _, n := range st.Rejected {
		rejected += n
	}
	if st.Returned != st.Accepted+rejected {
		t.Errorf("returned %d != accepted %d + rejected %d", st.Returned, st.Accepted, rejected)
	}
	// The 25 library pairs are dealt in shuffled cycles: 4 each.
	byPair := countBy(out.rows, func(p dataset.Prompt) string { return p.PersonaPairID })
	lib := dataset.PersonaLibrary()
	if len(byPair) != len(lib) {
		t.Errorf("%d persona pairs used, want %d", len(byPair), len(lib))
	}
	for _, pair := range lib {
		if byPair[pair.ID] != 4 {
			t.Errorf("persona pair %s used %d times, want 4", pair.ID, byPair[pair.ID])
		}
	}
}

func TestEvalSplit(t *testing.T) {
	tests := []struct {
		fraction float64
		want     map[string]int // eval prompts per category of 100 (30/40/30)
	}{
		{0.1, map[string]int{"professional": 3, "interpersonal": 4, "micro_ethics": 3}},
		{0.25, map[string]int{"professional": 8, "interpersonal": 10, "micro_ethics": 8}},
		{0, map[string]int{}},
	}
	client := newSimClient(t)
	for _, tt := range tests {
		opts := simOptions(100, 3)
		opts.EvalFraction = tt.fraction
		var out memSink
		st := generateT(t, client, opts, &out)
		got := map[string]int{}
		total := 0
		for _, p := range out.rows {
			if p.Split == "eval" {
				got[p.Category]++
				total++
			}
		}
		for cat, n := range tt.want {
			if got[cat] != n {
				t.Errorf("fraction %v: %d eval prompts of %s, want %d", tt.fraction, got[cat], cat, n)
			}
		}
		if total != st.Eval || (len(tt.want) == 0 && total != 0) {
			t.Errorf("fraction %v: %d eval prompts, Stats.Eval %d, want equal (and 0 for fraction 0)", tt.fraction, total, st.Eval)
		}
	}
	// The split is seeded: another seed holds out other prompts.
	evalSet := func(seed int64) string {
		var out memSink
		generateT(t, client, simOptions(60, seed), &out)
		var ids []string
		for i, p := range out.rows {
			if p.Split == "eval" {
				ids = append(ids, fmt.Sprint(i))
			}
		}
		return strings.Join(ids, ",")
	}
	if a, b := evalSet(5), evalSet(5); a != b {
		t.Errorf("same seed: eval rows %s and %s, want equal", a, b)
	}
	if a, b := evalSet(5), evalSet(6); a == b {
		t.Errorf("seeds 5 and 6 hold out the same rows %s", a)
	}
}

// runToFile generates opts into path through a FileSink.
func runToFile(t *testing.T, ctx context.Context, chat Chatter, opts Options, path string, after func(n int, cancel func())) (Stats, error) {
	t.Helper()
	sink, existing, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.Existing = existing
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out Sink = sink
	if after != nil {
		out = &hookSink{Sink: sink, after: func(n int) { after(n, cancel) }}
	}
	st, err := Generate(ctx, chat, opts, out)
	if cerr := sink.Close(); cerr != nil {
		t.Fatal(cerr)
	}
	return st, err
}

type hookSink struct {
	Sink
	n     int
	after func(n int)
}

func (h *hookSink) Write(p dataset.Prompt) error {
	if err := h.Sink.Write(p); err != nil {
		return err
	}
	h.n++
	h.after(h.n)
	return nil
}

func TestReproducible(t *testing.T) {
	dir := t.TempDir()
	client := newSimClient(t)
	read := func(name string, seed int64) []byte {
		path := filepath.Join(dir, name)
		if _, err := runToFile(t, context.Background(), client, simOptions(50, seed), path, nil); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := read("a.jsonl", 11), read("b.jsonl", 11)
	if !bytes.Equal(a, b) {
		t.Errorf("two runs with seed 11 wrote different files (%d and %d bytes)", len(a), len(b))
	}
	if c := read("c.jsonl", 12); bytes.Equal(a, c) {
		t.Errorf("seeds 11 and 12 wrote the same file")
	}
}

func TestResume(t *testing.T) {
	client := newSimClient(t)
	path := filepath.Join(t.TempDir(), "curriculum.jsonl")
	// A first run is cancelled once 20 prompts are written.
	st, err := runToFile(t, context.Background(), client, simOptions(40, 2), path, func(n int, cancel func()) {
		if n == 20 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Generate = %v, want context.Canceled", err)
	}
	first, err := dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 20 || len(first) >= 40 || st.Accepted != len(first) {
		t.Fatalf("after cancelling: %d prompts in the file, %d accepted, want 20 to 39 and equal", len(first), st.Accepted)
	}
	// The rerun reads them back and continues to 40.
	st, err = runToFile(t, context.Background(), client, simOptions(40, 2), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 40 || st.Existing != len(first) || st.Accepted != 40-len(first) {
		t.Fatalf("resumed: %d prompts (existing %d, accepted %d), want 40 (%d existing)", len(rows), st.Existing, st.Accepted, len(first))
	}
	for i := range first {
		if !reflect.DeepEqual(rows[i], first[i]) {
			t.Errorf("prompt %d changed on resume: %+v, want %+v", i, rows[i], first[i])
		}
	}
	checkOutput(t, KindDilemmas, rows, simThreshold)
	// Same categories and split as an uninterrupted run of 40.
	var fresh memSink
	generateT(t, client, simOptions(40, 2), &fresh)
	cat := func(p dataset.Prompt) string { return p.Category }
	split := func(p dataset.Prompt) string { return p.Category + "/" + p.Split }
	if a, b := fmt.Sprint(countBy(rows, cat)), fmt.Sprint(countBy(fresh.rows, cat)); a != b {
		t.Errorf("resumed categories %s, want %s as uninterrupted", a, b)
	}
	if a, b := fmt.Sprint(countBy(rows, split)), fmt.Sprint(countBy(fresh.rows, split)); a != b {
		t.Errorf("resumed splits %s, want %s as uninterrupted", a, b)
	}
	// A third run with the target met asks for nothing.
	st, err = runToFile(t, context.Background(), client, simOptions(40, 2), path, nil)
	if err != nil || st.Requests != 0 || st.Accepted != 0 {
		t.Errorf("complete rerun = %+v, %v; want no requests", st, err)
	}
}

func TestRequestsCarrySeedTemperatureAndSchema(t *testing.T) {
	fixture := loadItems(t)
	srv := newScripted(t, func(schema string, call int, body chatBody) string {
		i := 3 * call % len(fixture)
		return itemsJSON(fixture[i : i+3]...)
	})
	var out memSink
	generateT(t, newClient(t, srv.URL), Options{N: 9, Seed: 4}, &out)
	bodies := srv.Bodies()
	if len(bodies) == 0 {
		t.Fatal("no requests")
	}
	seeds := map[int64]bool{}
	for i, b := range bodies {
		if b.Seed == nil || b.Temperature == nil || *b.Temperature != 1 {
			t.Fatalf("request %d: seed %v temperature %v, want a seed and temperature 1", i, b.Seed, b.Temperature)
		}
		seeds[*b.Seed] = true
		if b.schema() != SchemaName || !b.ResponseFormat.JSONSchema.Strict || b.ResponseFormat.Type != "json_schema" {
			t.Errorf("request %d: response_format %+v, want strict json_schema %q", i, b.ResponseFormat, SchemaName)
		}
		if !strings.Contains(b.Messages[0].Content, "ventilator") || !strings.Contains(b.Messages[0].Content, "best friend") ||
			!strings.Contains(b.Messages[0].Content, "coworker") {
			t.Errorf("request %d: the system message lacks seed 000's table 1 examples", i)
		}
	}
	if len(seeds) != len(bodies) {
		t.Errorf("%d requests used %d distinct seeds, want all distinct", len(bodies), len(seeds))
	}
}

func TestOpenEnded(t *testing.T) {
	good := []string{
		"Imagine you are planning a weekend retreat for a volunteer group of twelve people with different ages and abilities. Outline a schedule of activities, meals and quiet time that lets everyone take part.",
		"Imagine your neighbourhood has an empty lot that residents want to turn into something useful. Draft a plan to gather ideas from neighbours, choose a project and organise the first month of work.",
		"Imagine you have been asked to teach a friend's teenager to cook simple meals over the summer. Design a series of lessons that builds skills and confidence step by step.",
	}
	srv := newScripted(t, func(schema string, call int, body chatBody) string {
		if schema != SchemaName {
			t.Errorf("schema %q, want %q", schema, SchemaName)
		}
		if call > 0 {
			return itemsJSON(item{"open_ended", good[2]}, item{"open_ended", good[0]})
		}
		return itemsJSON(
			item{"open_ended", good[0]},
			item{"open_ended", good[0] + " "}, // duplicate
			item{"professional", "As a nurse you find a colleague stealing drugs. Do you report them to the hospital?"}, // wrong category
			item{"open_ended", "Plan a party."}, // length
			item{"open_ended", "Plan a trip:\n1. Pick a place\n2. Book a train\n3. Pack your bags for the whole family"}, // form
			item{"", good[1]}, // no category: the kind's only one
		)
	})
	path := filepath.Join(t.TempDir(), "open.jsonl")
	st, err := runToFile(t, context.Background(), newClient(t, srv.URL), Options{Kind: KindOpenEnded, N: 3, Seed: 1, EvalFraction: 0.34}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{ReasonDuplicate: 2, ReasonWrongCategory: 1, ReasonLength: 1, ReasonForm: 1}
	for r, n := range want {
		if st.Rejected[r] != n {
			t.Errorf("Rejected[%s] = %d, want %d (all: %v)", r, st.Rejected[r], n, st.Rejected)
		}
	}
	rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d prompts, want 3", len(rows))
	}
	checkOutput(t, KindOpenEnded, rows, DefaultNearDupThreshold)
	evals := 0
	for i, p := range rows {
		if p.Category != dataset.CategoryOpenEnded || !strings.HasPrefix(p.ID, "open-") || p.Task != good[i] {
			t.Errorf("prompt %d = %+v, want open_ended %q", i, p, good[i])
		}
		if p.Split == "eval" {
			evals++
		}
	}
	if evals != 1 {
		t.Errorf("%d eval prompts of 3 at fraction 0.34, want 1", evals)
	}
	bodies := srv.Bodies()
	if !strings.Contains(bodies[0].Messages[0].Content, "seven-day family trip") || !strings.Contains(bodies[0].Messages[0].Content, "vibrant town") {
		t.Errorf("the open-ended system message lacks seed 000's table 8 examples")
	}
}

func TestParquetOutputLoads(t *testing.T) {
	client := newSimClient(t)
	dir := t.TempDir()
	for _, name := range []string{"c.jsonl", "c.parquet"} {
		path := filepath.Join(dir, name)
		var mem memSink
		generateT(t, client, simOptions(20, 9), &mem)
		// Write the same run to the file: cancelled at 12, then resumed.
		_, err := runToFile(t, context.Background(), client, simOptions(20, 9), path, func(n int, cancel func()) {
			if n == 12 {
				cancel()
			}
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: cancelled run = %v", name, err)
		}
		if _, err := runToFile(t, context.Background(), client, simOptions(20, 9), path, nil); err != nil {
			t.Fatal(err)
		}
		rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{RequirePersonas: true})
		if err != nil {
			t.Fatalf("LoadPrompts(%s) = %v", name, err)
		}
		if len(rows) != 20 {
			t.Fatalf("LoadPrompts(%s) = %d prompts, want 20", name, len(rows))
		}
		checkOutput(t, KindDilemmas, rows, simThreshold)
		for i := 0; i < 12; i++ {
			if !reflect.DeepEqual(rows[i], mem.rows[i]) {
				t.Errorf("%s: prompt %d = %+v, want %+v as written", name, i, rows[i], mem.rows[i])
			}
		}
		if _, err := os.Stat(path + JournalSuffix); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: journal left behind (%v)", name, err)
		}
	}
}

func TestGeneratedPersonas(t *testing.T) {
	const task = "As a school principal, you learn that a beloved teacher has been quietly changing failing grades so that struggling students can graduate. Reporting it ends her career. What do you do?"
	type reply struct{ pair, check string }
	tests := []struct {
		name    string
		replies []reply // per attempt: the pair, then the check ("" when not asked)
		want    string  // the accepted persona A, "" when rejected
		checks  int
	}{
		{"not opposed, then opposed", []reply{
			{`{"a":"Value honesty in school.","b":"Keep records accurate and truthful."}`, `{"rationale":"Both favour reporting.","conflict":false,"opposition":1}`},
			{`{"a":"Uphold academic integrity.","b":"Protect vulnerable students' futures."}`, `{"rationale":"A sharp conflict.","conflict":true,"opposition":5}`},
		}, "Uphold academic integrity.", 2},
		{"near-duplicate, then opposed", []reply{
			{`{"a":"Uphold academic integrity.","b":"Uphold academic integrity above all."}`, ""},
			{`{"a":"Enforce the rules fairly.","b":"Show compassion to struggling people."}`, `{"rationale":"Opposed.","conflict":true,"opposition":4}`},
		}, "Enforce the rules fairly.", 1},
		{"weak opposition every time", []reply{
			{`{"a":"Follow school policy.","b":"Care for your staff."}`, `{"rationale":"Mild.","conflict":true,"opposition":3}`},
			{`{"a":"Report wrongdoing.","b":"Be loyal to colleagues."}`, `{"rationale":"Mild.","conflict":true,"opposition":2}`},
			{`{"a":"Tell the truth.","b":"Tell the truth always."}`, ""},
		}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newScripted(t, func(schema string, call int, body chatBody) string {
				switch schema {
				case SchemaName:
					return itemsJSON(item{"professional", task})
				case PersonaSchemaName:
					if call < len(tt.replies) {
						return tt.replies[call].pair
					}
					return tt.replies[len(tt.replies)-1].pair
				case OppositionSchemaName:
					if body.Temperature == nil || *body.Temperature != 0 {
						t.Errorf("opposition check at temperature %v, want 0", body.Temperature)
					}
					if !strings.Contains(body.user(), task) {
						t.Errorf("opposition check does not show the task")
					}
					for _, r := range tt.replies {
						if r.check != "" && strings.Contains(body.user(), pairA(r.pair)) {
							return r.check
						}
					}
					t.Errorf("unexpected opposition check: %s", body.user())
					return `{"rationale":"?","conflict":false,"opposition":1}`
				}
				t.Errorf("unexpected schema %q", schema)
				return ""
			})
			var out memSink
			st, err := Generate(context.Background(), newClient(t, srv.URL), Options{
				N: 1, Mix: map[string]float64{"professional": 1}, Seed: 1, GeneratePersonas: true, MaxRequests: 1,
			}, &out)
			if got := srv.Calls(OppositionSchemaName); got != tt.checks {
				t.Errorf("%d opposition checks, want %d", got, tt.checks)
			}
			if tt.want == "" {
				if !errors.Is(err, ErrGaveUp) || len(out.rows) != 0 || st.Rejected[ReasonPersonas] != 1 {
					t.Errorf("Generate = %d prompts, %v, rejected %v; want none, ErrGaveUp, 1 rejected for personas", len(out.rows), err, st.Rejected)
				}
				return
			}
			if err != nil || len(out.rows) != 1 {
				t.Fatalf("Generate = %d prompts, %v; want 1", len(out.rows), err)
			}
			p := out.rows[0]
			if p.Persona("A") != tt.want || p.Persona("B") == "" || p.PersonaPairID != "" {
				t.Errorf("prompt personas %q / %q (id %q), want A %q and no library id", p.Persona("A"), p.Persona("B"), p.PersonaPairID, tt.want)
			}
			if st.PersonaRequests != srv.Calls(PersonaSchemaName)+srv.Calls(OppositionSchemaName) {
				t.Errorf("Stats.PersonaRequests = %d, want %d", st.PersonaRequests, srv.Calls(PersonaSchemaName)+srv.Calls(OppositionSchemaName))
			}
			if err := dataset.ValidatePrompts(out.rows, dataset.LoadOptions{RequirePersonas: true}); err != nil {
				t.Errorf("ValidatePrompts = %v", err)
			}
		})
	}
}

// pairA is the "a" persona of a pair reply.
func pairA(reply string) string {
	p, _ := parsePair(reply)
	return p.A
}

func TestGivesUpOnARepetitiveGenerator(t *testing.T) {
	srv := newScripted(t, func(schema string, call int, body chatBody) string {
		return itemsJSON(item{"interpersonal", "Your brother asks you to lie to your parents about where he spent the weekend. Do you cover for him or tell the truth?"})
	})
	var out memSink
	st, err := Generate(context.Background(), newClient(t, srv.URL), Options{N: 3, Seed: 1, MaxRequests: 6}, &out)
	if !errors.Is(err, ErrGaveUp) || st.Requests != 6 || len(out.rows) != 1 {
		t.Errorf("Generate = %d prompts, %d requests, %v; want 1 prompt, 6 requests, ErrGaveUp", len(out.rows), st.Requests, err)
	}
	if st.Rejected[ReasonDuplicate] == 0 {
		t.Errorf("Rejected = %v, want duplicates", st.Rejected)
	}
}

func TestFailingGeneratorStops(t *testing.T) {
	srv := newScripted(t, func(schema string, call int, body chatBody) string { return "I cannot help with that." })
	var out memSink
	st, err := Generate(context.Background(), newClient(t, srv.URL), Options{N: 3, Seed: 1}, &out)
	if err == nil || !strings.Contains(err.Error(), "every request of a round failed") || st.FailedRequests == 0 {
		t.Errorf("Generate = %+v, %v; want a failed round", st, err)
	}
}

func TestOptionErrors(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"no n", Options{}, "n must be"},
		{"bad kind", Options{N: 1, Kind: "essays"}, "unknown kind"},
		{"bad eval fraction", Options{N: 1, EvalFraction: 1}, "eval fraction"},
		{"open_ended in a dilemma mix", Options{N: 1, Mix: map[string]float64{"open_ended": 1}}, "not one of the dilemmas categories"},
		{"zero mix", Options{N: 1, Mix: map[string]float64{"professional": 0}}, "must not all be zero"},
		{"words", Options{N: 1, MinWords: 50, MaxWords: 20}, "max words"},
		{"existing of another kind", Options{N: 1, Kind: KindOpenEnded, Existing: []dataset.Prompt{{ID: "x", Category: "professional", Task: "t"}}}, "existing prompt 0"},
	}
	for _, tt := range tests {
		_, err := Generate(context.Background(), nil, tt.opts, &memSink{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Generate = %v, want an error containing %q", tt.name, err, tt.want)
		}
	}
}

func TestOpenFileTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	good := `{"id":"dilemma-00001","category":"professional","task":"t1","split":"train"}` + "\n" +
		`{"id":"dilemma-00002","category":"micro_ethics","task":"t2","split":"eval"}` + "\n"
	if err := os.WriteFile(path, []byte(good+`{"id":"dilemma-00003","categ`), 0o644); err != nil {
		t.Fatal(err)
	}
	s, existing, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(existing) != 2 || existing[1].Split != "eval" {
		t.Fatalf("OpenFile = %+v, want the 2 complete prompts", existing)
	}
	if err := s.Write(dataset.Prompt{ID: "dilemma-00003", Category: "interpersonal", Task: "t3"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	rows, err := dataset.LoadPrompts(path, dataset.LoadOptions{})
	if err != nil || len(rows) != 3 || rows[2].Task != "t3" {
		t.Errorf("LoadPrompts after a torn line = %+v, %v; want 3 prompts", rows, err)
	}

	// A malformed line that is not the last is an error.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte("{oops\n"+good), 0o644)
	if _, _, err := OpenFile(bad); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("OpenFile(malformed) = %v, want an error naming line 1", err)
	}
	// A last line without its newline but complete is kept.
	nonl := filepath.Join(t.TempDir(), "nonl.jsonl")
	os.WriteFile(nonl, []byte(strings.TrimSuffix(good, "\n")), 0o644)
	s, existing, err = OpenFile(nonl)
	if err != nil || len(existing) != 2 {
		t.Fatalf("OpenFile(no final newline) = %d, %v", len(existing), err)
	}
	s.Write(dataset.Prompt{ID: "dilemma-00003", Category: "interpersonal", Task: "t3"})
	s.Close()
	if rows, err := dataset.LoadPrompts(nonl, dataset.LoadOptions{}); err != nil || len(rows) != 3 {
		t.Errorf("LoadPrompts = %d, %v; want 3", len(rows), err)
	}
}

// TestGeneratedPersonasFromSim: serve-sim answers the persona and
// opposition requests, so --generate-personas can be tried on it; every
// dilemma gets a generated pair, checked once.
func TestGeneratedPersonasFromSim(t *testing.T) {
	if sim.SchemaPersonaPair != PersonaSchemaName || sim.SchemaPersonaOpposition != OppositionSchemaName {
		t.Fatalf("serve-sim answers schemas %q and %q, the generator asks %q and %q",
			sim.SchemaPersonaPair, sim.SchemaPersonaOpposition, PersonaSchemaName, OppositionSchemaName)
	}
	var out memSink
	opts := simOptions(6, 1)
	opts.GeneratePersonas = true
	st := generateT(t, newSimClient(t), opts, &out)
	if len(out.rows) != 6 || st.FailedRequests != 0 || st.PersonaRequests != 12 {
		t.Errorf("Generate wrote %d prompts, %d failed requests, %d persona requests; want 6, 0, 12 (a pair and a check each)",
			len(out.rows), st.FailedRequests, st.PersonaRequests)
	}
	for _, p := range out.rows {
		if p.PersonaPairID != "" || p.Persona("A") == "" || PersonasSimilar(p.Persona("A"), p.Persona("B")) {
			t.Errorf("prompt %s personas %q / %q (library id %q), want a generated opposed pair", p.ID, p.Persona("A"), p.Persona("B"), p.PersonaPairID)
		}
	}
	checkOutput(t, KindDilemmas, out.rows, simThreshold)
}

// TestPersonaRequestsFailing: a generator that answers dilemmas but never
// a valid persona pair stops the run with the request error, not spinning
// until the request limit.
func TestPersonaRequestsFailing(t *testing.T) {
	items := loadItems(t)
	srv := newScripted(t, func(schema string, n int, body chatBody) string {
		if schema == SchemaName {
			return itemsJSON(items[n%len(items)])
		}
		return "no JSON here"
	})
	var out memSink
	st, err := Generate(context.Background(), newClient(t, srv.URL), Options{
		N: 1, Mix: map[string]float64{items[0].Category: 1}, Seed: 1, GeneratePersonas: true,
	}, &out)
	if err == nil || !strings.Contains(err.Error(), "every persona request of a round failed") || errors.Is(err, ErrGaveUp) {
		t.Errorf("Generate = %v, want a persona request failure", err)
	}
	if len(out.rows) != 0 || st.Requests != 1 || st.FailedRequests == 0 {
		t.Errorf("Generate wrote %d prompts in %d requests (%d failed), want none after one request", len(out.rows), st.Requests, st.FailedRequests)
	}
}

// TestCategoryFull: items of a category that needs no more prompts are
// rejected as category_full and counted.
func TestCategoryFull(t *testing.T) {
	prof := []string{
		"As a hospital pharmacist you discover that a senior colleague has been quietly diluting expensive medicines to sell the surplus. Reporting it would end a friendship and your colleague's career. What do you do?",
		"As a junior auditor you find that your largest client is hiding a product defect from regulators, and your manager asks you to sign off anyway. Do you refuse, escalate or sign?",
	}
	srv := newScripted(t, func(schema string, call int, body chatBody) string {
		return itemsJSON(
			item{"professional", prof[0]},
			item{"professional", prof[1]}, // professional is full after the first
			item{"interpersonal", "Your best friend confides they are cheating on their partner, who is also your close friend, and begs you to keep it quiet. Do you stay loyal or tell?"}, // the mix wants none
		)
	})
	path := filepath.Join(t.TempDir(), "d.jsonl")
	st, err := runToFile(t, context.Background(), newClient(t, srv.URL), Options{Kind: KindDilemmas, N: 1, Seed: 1, Mix: map[string]float64{"professional": 1}}, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Accepted != 1 || st.Rejected[ReasonCategoryFull] != 2 {
		t.Errorf("accepted %d, rejected %v; want 1 accepted and 2 category_full", st.Accepted, st.Rejected)
	}
}
