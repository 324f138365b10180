package reward

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
)

// TestConnectionsAreReused checks that the body rewrite and go-openai's
// response handling keep HTTP keep-alive working (one TLS handshake per
// connection, not per verdict, against a real API).
func TestConnectionsAreReused(t *testing.T) {
	srv := newFakeAPI(t, func(n int, w http.ResponseWriter, r *http.Request, req chatBody) { writeReply(w, okReply) })
	var dials atomic.Int32
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	opts := testClientOptions(srv)
	opts.HTTPClient = &http.Client{Transport: tr}
	j, _ := newTestCA(t, opts)
	for i := 0; i < 20; i++ {
		r := therapist()
		r.Final = string(rune('a' + i))
		if _, err := j.Judge(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	if d := dials.Load(); d != 1 {
		t.Errorf("20 sequential judge calls dialled %d connections, want 1 (keep-alive)", d)
	}
}
