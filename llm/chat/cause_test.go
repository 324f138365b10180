package chat

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestCause: each kind of failure is named the same way whatever wraps
// it, so that callers count and warn once per cause.
func TestCause(t *testing.T) {
	wrap := func(err error) error {
		return fmt.Errorf("reward.CAJudge.Judge r1: judge m: giving up after 3 attempts: %w", err)
	}
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{wrap(&openai.APIError{HTTPStatusCode: 429}), "rate limited (HTTP 429)"},
		{wrap(&openai.RequestError{HTTPStatusCode: 503}), "HTTP 503"},
		{wrap(&openai.APIError{HTTPStatusCode: 401}), "API key rejected"},
		{wrap(ErrKeyRejected), "API key rejected"},
		{wrap(NoVerdict("no score in judge reply")), "no valid verdict"},
		{wrap(&invalidReplyError{errors.New("no choices")}), "invalid reply"},
		{wrap(&timeoutError{err: context.DeadlineExceeded, timeout: time.Second}), "timeout"},
		{wrap(&net.OpError{Op: "dial", Err: errors.New("connection refused")}), "connection"},
		{wrap(context.Canceled), "canceled"},
		{errors.New("something else"), "other"},
	}
	for _, tt := range tests {
		if got := Cause(tt.err); got != tt.want {
			t.Errorf("Cause(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
