package weightsync_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/llm/weightsync"
)

// TestNCCLRequest: the NCCL transfer asks the trainer by a request file
// naming the step and the endpoints, and takes its answer: .sent is done,
// .failed an error with the trainer's reason, none a timeout naming both
// sides' settings.
func TestNCCLRequest(t *testing.T) {
	for _, tc := range []struct {
		name, answer, body, wantErr string
	}{
		{"sent", ".sent", "{}", ""},
		{"failed", ".failed", "RuntimeError: NCCL error: unhandled system error", "could not broadcast step 3's weights: RuntimeError: NCCL error"},
		{"no answer", "", "", "--weight-transfer nccl"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := t.TempDir()
			tr := weightsync.NewNCCL(run, []string{"http://a:1", "http://b:2"}, time.Second)
			base := filepath.Join(run, weightsync.SyncDir, "step-000003")
			go func() { // the trainer
				for range 100 {
					b, err := os.ReadFile(base + ".request")
					if err == nil {
						var r struct {
							Step      int      `json:"step"`
							Endpoints []string `json:"endpoints"`
						}
						if json.Unmarshal(b, &r) != nil || r.Step != 3 || len(r.Endpoints) != 2 {
							t.Errorf("request %s", b)
						}
						if tc.answer != "" {
							os.WriteFile(base+tc.answer, []byte(tc.body), 0o644)
						}
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
			err := tr.Transfer(context.Background(), 3, "")
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if _, err := os.Stat(base + ".request"); !os.IsNotExist(err) {
					t.Error("the answered request is left")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Transfer = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}
