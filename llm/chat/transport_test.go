package chat_test

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/parleyhq/parley/llm/chat"
	"github.com/parleyhq/parley/llm/chat/chattest"
)

// TestConnectionsAreReused checks that the body rewrite and go-openai's
// response handling keep HTTP keep-alive working (one TLS handshake per
// connection, not per request, against a real API).
func TestConnectionsAreReused(t *testing.T) {
	srv := chattest.NewFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chattest.Body) {
		chattest.WriteReply(w, "ok")
	})
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	opts := testClientOptions(srv)
	opts.HTTPClient = &http.Client{Transport: tr}
	c, _ := newTestChat(t, opts)
	for i := 0; i < 20; i++ {
		msg := string(rune('a' + i))
		if _, err := c.Chat(context.Background(), chat.Request{Messages: []chat.Message{{Role: "user", Content: msg}}}); err != nil {
			t.Fatal(err)
		}
	}
	if d := dials.Load(); d != 1 {
		t.Errorf("20 sequential chat calls dialled %d connections, want 1 (keep-alive)", d)
	}
}
