package chat_test

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// TestStatsCountRetriesAnd429s: the client counts each request once with
// all its attempts, the retries, the attempts answered 429 apart from
// other failures, the usage of every answered attempt (a rejected reply
// that is retried was paid for) and the backend that answered; Since
// gives the difference with one latency per request.
func TestStatsCountRetriesAnd429s(t *testing.T) {
	tests := []struct {
		name string
		// answers are the statuses of the attempts (200: a good reply; 0:
		// a reply Validate rejects).
		answers []int
		want    chat.Stats
	}{
		{"first try", []int{200}, chat.Stats{Requests: 1, Attempts: 1, PromptTokens: 100, CompletionTokens: 20}},
		{"429 then ok", []int{429, 200}, chat.Stats{Requests: 1, Attempts: 2, Retries: 1, RateLimited: 1, PromptTokens: 100, CompletionTokens: 20}},
		{"503 429 ok", []int{503, 429, 200}, chat.Stats{Requests: 1, Attempts: 3, Retries: 2, RateLimited: 1, PromptTokens: 100, CompletionTokens: 20}},
		{"rejected reply retried", []int{0, 200}, chat.Stats{Requests: 1, Attempts: 2, Retries: 1, PromptTokens: 200, CompletionTokens: 40}},
		{"429 to the end", []int{429, 429, 429, 429}, chat.Stats{Requests: 1, Failures: 1, Attempts: 4, Retries: 3, RateLimited: 4}},
		{"permanent 400", []int{400}, chat.Stats{Requests: 1, Failures: 1, Attempts: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
				switch code := tt.answers[min(n, len(tt.answers)-1)]; code {
				case 200:
					chattest.WriteReply(w, "good")
				case 0:
					chattest.WriteReply(w, "bad")
				default:
					chattest.WriteError(w, code, "no")
				}
			})
			c, _ := newTestChat(t, testClientOptions(srv))
			before := c.Stats()
			_, _ = c.Chat(context.Background(), chat.Request{
				Messages: []chat.Message{{Role: "user", Content: "hi"}},
				Validate: func(s string) error {
					if s != "good" {
						return chat.NoVerdict("not good")
					}
					return nil
				},
			})
			got, lat := c.Since(before)
			backends := got.Backends
			got.Backends = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Since = %+v, want %+v", got, tt.want)
			}
			if len(lat) != 1 || lat[0] <= 0 {
				t.Errorf("latencies %v, want one positive", lat)
			}
			answered := int64(0)
			for _, a := range tt.answers {
				if a == 200 || a == 0 {
					answered++
				}
			}
			if n := backends[chat.Backend{Model: "judge-test"}]; n != answered || len(backends) > 1 {
				t.Errorf("Backends = %v, want %d answers by judge-test without a fingerprint", backends, answered)
			}
			if again, lat := c.Since(c.Stats()); again.Requests != 0 || len(lat) != 0 {
				t.Errorf("Since(now) = %+v, %v, want nothing", again, lat)
			}
		})
	}
}
