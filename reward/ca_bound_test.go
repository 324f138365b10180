package reward

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/parleyhq/parley/llm/chat/chattest"
)

// TestCAJudgeRationaleBound checks the schema the CA judge sends with
// WithRationaleMaxChars: unbounded by default (what OpenAI's strict mode
// accepts), maxLength on the rationale when bounded, the rationale still
// the first property (the order a grammar decodes in), and the bound in
// the cache key (a verdict asked under one bound is not reused under
// another).
func TestCAJudgeRationaleBound(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, `{"rationale":"short","score":3}`)
	})
	opts := testClientOptions(srv)
	opts.CacheDir = t.TempDir()
	c, _ := newTestChat(t, opts)
	tests := []struct {
		name      string
		bound     int
		wantMax   *int // nil: no maxLength
		wantCalls int  // the fake API's calls after this row
	}{
		{"unbounded by default", 0, nil, 1},
		{"unbounded again: from the cache", -1, nil, 1},
		{"bounded: a new question", 300, ptr(300), 2},
		{"bounded the same: from the cache", 300, ptr(300), 2},
		{"another bound: a new question", 40, ptr(40), 3},
	}
	for _, tt := range tests {
		j := NewCAJudge(c).WithRationaleMaxChars(tt.bound)
		res, err := j.Judge(context.Background(), therapist())
		if err != nil || res.Score != 3 {
			t.Fatalf("%s: Judge = %+v, %v; want score 3", tt.name, res, err)
		}
		if srv.Calls() != tt.wantCalls {
			t.Errorf("%s: %d API calls, want %d", tt.name, srv.Calls(), tt.wantCalls)
		}
		schema := lastSchema(t, srv)
		var s struct {
			Properties struct {
				Rationale struct {
					MaxLength *int `json:"maxLength"`
				} `json:"rationale"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Fatalf("%s: schema %s: %v", tt.name, schema, err)
		}
		got := s.Properties.Rationale.MaxLength
		if (got == nil) != (tt.wantMax == nil) || (got != nil && *got != *tt.wantMax) {
			t.Errorf("%s: rationale maxLength = %v, want %v (schema %s)", tt.name, deref(got), deref(tt.wantMax), schema)
		}
		if r, sc := bytes.Index(schema, []byte(`"rationale":{`)), bytes.Index(schema, []byte(`"score":{`)); r < 0 || sc < r {
			t.Errorf("%s: schema %s: want the rationale property before the score", tt.name, schema)
		}
		if len(s.Required) != 2 {
			t.Errorf("%s: required = %v, want rationale and score", tt.name, s.Required)
		}
	}
}

func ptr(n int) *int { return &n }

// lastSchema is the response-format JSON schema of the fake API's last
// request.
func lastSchema(t *testing.T, srv *chattest.FakeAPI) json.RawMessage {
	t.Helper()
	var body chattest.Body
	if err := json.Unmarshal(srv.Body(srv.Calls()-1), &body); err != nil {
		t.Fatal(err)
	}
	return body.ResponseFormat.JSONSchema.Schema
}

func deref(p *int) any {
	if p == nil {
		return "none"
	}
	return *p
}

// TestGroupJudgeRationaleBound: the group judge bounds every member's
// rationale as the pointwise judge does (judge.rationale_max_chars), and
// the bound is part of its cache key.
func TestGroupJudgeRationaleBound(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, `{"scores":[{"label":"S1","rationale":"short","score":3}]}`)
	})
	opts := testClientOptions(srv)
	opts.CacheDir = t.TempDir()
	c, _ := newTestChat(t, opts)
	for _, tt := range []struct {
		name      string
		bound     int
		wantMax   *int
		wantCalls int
	}{
		{"unbounded by default", 0, nil, 1},
		{"bounded: a new question", 120, ptr(120), 2},
		{"bounded the same: from the cache", 120, ptr(120), 2},
	} {
		j := NewCAGroupJudge(c, GroupOptions{RationaleMaxChars: tt.bound})
		res, err := j.Judge(context.Background(), therapist())
		if err != nil || res.Score != 3 {
			t.Fatalf("%s: Judge = %+v, %v; want score 3", tt.name, res, err)
		}
		if srv.Calls() != tt.wantCalls {
			t.Errorf("%s: %d API calls, want %d", tt.name, srv.Calls(), tt.wantCalls)
		}
		var s struct {
			Properties struct {
				Scores struct {
					Items struct {
						Properties struct {
							Rationale struct {
								MaxLength *int `json:"maxLength"`
							} `json:"rationale"`
						} `json:"properties"`
					} `json:"items"`
				} `json:"scores"`
			} `json:"properties"`
		}
		schema := lastSchema(t, srv)
		if err := json.Unmarshal(schema, &s); err != nil {
			t.Fatalf("%s: schema %s: %v", tt.name, schema, err)
		}
		got := s.Properties.Scores.Items.Properties.Rationale.MaxLength
		if (got == nil) != (tt.wantMax == nil) || (got != nil && *got != *tt.wantMax) {
			t.Errorf("%s: rationale maxLength = %v, want %v (schema %s)", tt.name, deref(got), deref(tt.wantMax), schema)
		}
	}
}
