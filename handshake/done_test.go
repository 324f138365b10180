package handshake

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
)

func TestReadWaitDone(t *testing.T) {
	run := dataset.RunDir(t.TempDir())
	if err := run.Create(); err != nil {
		t.Fatal(err)
	}
	ckpt := run.CheckpointDir(3)
	if err := os.MkdirAll(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := ReadDone(ckpt); ok || err != nil {
		t.Fatalf("ReadDone(no marker) = %v, %v; want false, nil", ok, err)
	}

	// WaitDone returns once the marker appears.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	written := make(chan error, 1)
	go func() {
		time.Sleep(30 * time.Millisecond)
		written <- WriteDone(ckpt, Done{Step: 3, Metrics: map[string]float64{"loss": 0.25}})
	}()
	got, err := WaitDone(ctx, ckpt, 5*time.Millisecond)
	if err != nil {
		t.Fatalf("WaitDone() = %v", err)
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	want := Done{Step: 3, Metrics: map[string]float64{"loss": 0.25}, AdapterPath: ckpt}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WaitDone() = %+v, want %+v", got, want)
	}

	// A marker for another step, or one that never parses, is an error
	// naming the marker's path.
	bad := []struct {
		name, content, want string
	}{
		{"other step", `{"step": 4, "metrics": {}}`, "is for step 4, its folder's is 3"},
		{"garbage", `{"step": 3, "metr`, "not a DONE marker: unexpected EOF"},
		{"not json", `xyz`, "not a DONE marker: invalid character 'x'"},
		{"trailing", `{"step": 3} {"step": 3}`, "trailing data"},
	}
	for _, tt := range bad {
		path := filepath.Join(ckpt, dataset.DoneFile)
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		want := path + ": " + tt.want
		if _, err := WaitDone(ctx, ckpt, 5*time.Millisecond); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("WaitDone(%s) error = %v, want one containing %q", tt.name, err, want)
		}
		if _, _, err := ReadDone(ckpt); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadDone(%s) error = %v, want one containing %q", tt.name, err, want)
		}
	}

	// The context ends the wait.
	other := run.CheckpointDir(9)
	cctx, ccancel := context.WithCancel(context.Background())
	ccancel()
	if _, err := WaitDone(cctx, other, time.Millisecond); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitDone(cancelled) error = %v, want context.Canceled", err)
	}

	// An explicit adapter path is kept; NaN metrics cannot be written.
	if err := WriteDone(ckpt, Done{Step: 3, AdapterPath: "/elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if d, _, _ := ReadDone(ckpt); d.AdapterPath != "/elsewhere" {
		t.Errorf("ReadDone().AdapterPath = %q, want /elsewhere", d.AdapterPath)
	}
	if err := WriteDone(ckpt, Done{Step: 3, Metrics: map[string]float64{"loss": math.NaN()}}); err == nil {
		t.Error("WriteDone(NaN metric) = nil, want an error")
	}
}
