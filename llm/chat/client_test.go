package chat_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// newTestChat returns a chat client over srv that does not really sleep.
func newTestChat(t *testing.T, opts chat.Options) (*chat.Client, *chattest.NoSleep) {
	t.Helper()
	ns := &chattest.NoSleep{}
	opts.Sleep = ns.Sleep
	c, err := chat.New(opts)
	if err != nil {
		t.Fatalf("chat.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, ns
}

// testClientOptions are fast options against srv.
func testClientOptions(srv *chattest.FakeAPI) chat.Options {
	return chat.Options{
		BaseURL:     srv.URL + "/v1",
		Model:       "judge-test",
		APIKey:      "test-key",
		Concurrency: 4,
		Retry:       retry.Policy{MaxRetries: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond},
		Timeout:     10 * time.Second,
	}
}

// chatExtras are request fields the judge tests do not read.
type chatExtras struct {
	Seed *int64 `json:"seed"`
}

func TestChatSendsTemperatureSeedAndSchema(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, `{"items":[]}`)
	})
	opts := testClientOptions(srv)
	opts.Temperature = 0.7
	c, _ := newTestChat(t, opts)
	zero := 0.0
	seed := int64(12345)
	tests := []struct {
		name            string
		req             chat.Request
		wantTemperature float64
		wantSeed        *int64
		wantSchema      string
		wantMaxTokens   int
	}{
		{"client temperature, no seed, no schema", chat.Request{}, 0.7, nil, "", chat.DefaultMaxTokens},
		{"temperature 0 override", chat.Request{Temperature: &zero}, 0, nil, "", chat.DefaultMaxTokens},
		{"seed, schema and max tokens", chat.Request{Seed: &seed, SchemaName: "dilemmas", Schema: json.RawMessage(`{"type":"object"}`), MaxTokens: 77}, 0.7, &seed, "dilemmas", 77},
	}
	for i, tt := range tests {
		tt.req.Messages = []chat.Message{{Role: "system", Content: "sys"}, {Role: "user", Content: "hello"}}
		resp, err := c.Chat(context.Background(), tt.req)
		if err != nil {
			t.Fatalf("%s: Chat = %v", tt.name, err)
		}
		if resp.Content != `{"items":[]}` || resp.PromptTokens != 100 || resp.CompletionTokens != 20 || resp.FinishReason != "stop" {
			t.Errorf("%s: Chat = %+v", tt.name, resp)
		}
		raw := srv.Body(i)
		var body chattest.Body
		var extra chatExtras
		json.Unmarshal(raw, &body)
		json.Unmarshal(raw, &extra)
		if body.Temperature == nil || *body.Temperature != tt.wantTemperature {
			t.Errorf("%s: temperature %v, want %v sent", tt.name, body.Temperature, tt.wantTemperature)
		}
		if (extra.Seed == nil) != (tt.wantSeed == nil) || (extra.Seed != nil && *extra.Seed != *tt.wantSeed) {
			t.Errorf("%s: seed %v, want %v", tt.name, extra.Seed, tt.wantSeed)
		}
		gotSchema := ""
		if body.ResponseFormat != nil {
			gotSchema = body.ResponseFormat.JSONSchema.Name
			if !body.ResponseFormat.JSONSchema.Strict {
				t.Errorf("%s: schema not strict", tt.name)
			}
		}
		if gotSchema != tt.wantSchema {
			t.Errorf("%s: schema %q, want %q", tt.name, gotSchema, tt.wantSchema)
		}
		if body.MaxTokens != tt.wantMaxTokens {
			t.Errorf("%s: max_completion_tokens %d, want %d", tt.name, body.MaxTokens, tt.wantMaxTokens)
		}
		if len(body.Messages) != 2 || body.Messages[1].Content != "hello" {
			t.Errorf("%s: messages %+v", tt.name, body.Messages)
		}
	}
}

func TestChatRetriesRejectedReplies(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		switch n {
		case 0:
			chattest.WriteReply(w, "not json")
		case 1:
			chattest.WriteError(w, http.StatusServiceUnavailable, "busy")
		default:
			chattest.WriteReply(w, `{"ok":true}`)
		}
	})
	c, ns := newTestChat(t, testClientOptions(srv))
	resp, err := c.Chat(context.Background(), chat.Request{
		Messages: []chat.Message{{Role: "user", Content: "x"}},
		Validate: func(s string) error {
			if !json.Valid([]byte(s)) {
				return errors.New("not JSON")
			}
			return nil
		},
	})
	if err != nil || resp.Content != `{"ok":true}` {
		t.Fatalf("Chat = %+v, %v; want the third reply", resp, err)
	}
	if srv.Calls() != 3 || len(ns.Waits()) != 2 {
		t.Errorf("calls %d, backoffs %d; want 3 and 2", srv.Calls(), len(ns.Waits()))
	}
}

func TestChatInvalidReplies(t *testing.T) {
	tests := []struct {
		name  string
		reply func(w http.ResponseWriter)
		want  string
	}{
		{"rejected", func(w http.ResponseWriter) { chattest.WriteReply(w, "prose") }, "reply rejected"},
		{"refusal", func(w http.ResponseWriter) {
			chattest.WriteMessage(w, map[string]any{"role": "assistant", "content": "", "refusal": "I can't"}, "stop")
		}, "refusal: I can't"},
		{"empty", func(w http.ResponseWriter) {
			chattest.WriteMessage(w, map[string]any{"role": "assistant", "content": " "}, "length")
		}, "empty reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) { tt.reply(w) })
			opts := testClientOptions(srv)
			opts.Name = "generator"
			opts.Retry.MaxRetries = 2
			c, _ := newTestChat(t, opts)
			_, err := c.Chat(context.Background(), chat.Request{
				Messages: []chat.Message{{Role: "user", Content: "x"}},
				Validate: func(s string) error { return errors.New("never good") },
			})
			if !errors.Is(err, chat.ErrInvalidReply) || errors.Is(err, chat.ErrNoVerdict) {
				t.Fatalf("Chat = %v, want chat.ErrInvalidReply (and not chat.ErrNoVerdict)", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) || !strings.Contains(msg, "generator judge-test: giving up after 3 attempts") {
				t.Errorf("Chat error = %q, want %q and the client's name", msg, tt.want)
			}
			if srv.Calls() != 3 {
				t.Errorf("calls = %d, want 3", srv.Calls())
			}
		})
	}
}

func TestChatWithoutStructuredOutput(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		if req.ResponseFormat != nil {
			t.Errorf("response_format sent with structured output disabled")
		}
		chattest.WriteReply(w, "ok")
	})
	opts := testClientOptions(srv)
	opts.DisableStructuredOutput = true
	c, _ := newTestChat(t, opts)
	if _, err := c.Chat(context.Background(), chat.Request{
		Messages:   []chat.Message{{Role: "user", Content: "x"}},
		SchemaName: "dilemmas", Schema: json.RawMessage(`{}`),
	}); err != nil {
		t.Fatal(err)
	}
}

func TestNewChatClientNeedsModel(t *testing.T) {
	if _, err := chat.New(chat.Options{}); err == nil || !strings.Contains(err.Error(), "model") {
		t.Errorf("chat.New(no model) = %v, want a model error", err)
	}
}

func TestObserveSeesEachRequestOnce(t *testing.T) {
	tests := []struct {
		name    string
		status  []int // per attempt: 0 replies, else the error status
		wantErr bool
	}{
		{"first attempt", []int{0}, false},
		{"after a retry", []int{503, 0}, false},
		{"refused", []int{400}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				if tt.status[n] != 0 {
					chattest.WriteError(w, tt.status[n], "no")
					return
				}
				chattest.WriteReply(w, "fine")
			})
			var calls int
			var gotErr error
			opts := testClientOptions(srv)
			opts.Observe = func(elapsed time.Duration, err error) {
				calls++
				gotErr = err
				if elapsed <= 0 {
					t.Errorf("elapsed %v, want > 0", elapsed)
				}
			}
			c, _ := newTestChat(t, opts)
			_, err := c.Chat(context.Background(), chat.Request{Messages: []chat.Message{{Role: "user", Content: "x"}}})
			if calls != 1 || (gotErr != nil) != tt.wantErr || (err != nil) != tt.wantErr {
				t.Errorf("Observe called %d times with %v (Chat: %v); want once, error %v", calls, gotErr, err, tt.wantErr)
			}
		})
	}
}

// TestCheck: the preflight call passes when the API answers (even 404 or
// 500: only the key matters), fails with ErrKeyRejected on 401 and 403
// without showing the key, and says a dead API does not answer; one
// attempt, no retries.
func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		down     bool
		rejected bool
		wantErr  string
	}{
		{"answers", http.StatusOK, false, false, ""},
		{"no /models", http.StatusNotFound, false, false, ""},
		{"server error", http.StatusInternalServerError, false, false, ""},
		{"401", http.StatusUnauthorized, false, true, "API key rejected (HTTP 401)"},
		{"403", http.StatusForbidden, false, true, "API key rejected (HTTP 403)"},
		{"down", 0, true, false, "does not answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				if tt.status == http.StatusOK {
					w.Write([]byte(`{"object":"list","data":[{"id":"judge-test","object":"model"}]}`))
					return
				}
				w.Write([]byte(`{"error":{"message":"no: test-key","type":"invalid_request_error"}}`))
			}))
			defer srv.Close()
			if tt.down {
				srv.Close()
			}
			opts := testClientOptions(&chattest.FakeAPI{Server: srv})
			c, _ := newTestChat(t, opts)
			err := c.Check(context.Background())
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("Check = %v, want %q", err, tt.wantErr)
			}
			if errors.Is(err, chat.ErrKeyRejected) != tt.rejected {
				t.Errorf("Check = %v: errors.Is ErrKeyRejected %v, want %v", err, !tt.rejected, tt.rejected)
			}
			if err != nil && strings.Contains(err.Error(), "test-key") {
				t.Errorf("Check shows the key: %v", err)
			}
			if n := calls.Load(); !tt.down && n != 1 {
				t.Errorf("Check made %d requests, want 1", n)
			}
		})
	}
}
