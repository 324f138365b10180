package weightsync_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/vllmtest"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/weights"
	"github.com/parleyhq/parley/llm/weightsync"
)

// perturbed writes a copy of the model folder base to dir with every F32
// tensor moved by scale·sin(i), its config beside it.
func perturbed(t *testing.T, base, dir string, scale float64) {
	t.Helper()
	f, err := weights.Read(base)
	if err != nil {
		t.Fatal(err)
	}
	var out []weights.Written
	for _, name := range f.Names() {
		ts := f.Tensors[name]
		fh, err := os.Open(ts.File)
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, ts.End-ts.Begin)
		if _, err := fh.ReadAt(b, ts.Begin); err != nil {
			t.Fatal(err)
		}
		fh.Close()
		if ts.DType != "F32" {
			t.Fatalf("%s is %s; the tiny model is F32", name, ts.DType)
		}
		for i := 0; i < len(b); i += 4 {
			v := math.Float32frombits(binary.LittleEndian.Uint32(b[i:]))
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(v+float32(scale*math.Sin(float64(i)))))
		}
		out = append(out, weights.Written{Name: name, DType: ts.DType, Shape: ts.Shape, Data: b})
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := weights.WriteFile(filepath.Join(dir, "model.safetensors"), out); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(base, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// baseCopy copies the base model's weights and config to root/base-copy.
func baseCopy(t *testing.T, base, root string) string {
	t.Helper()
	dir := filepath.Join(root, "base-copy")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"model.safetensors", "config.json"} {
		b, err := os.ReadFile(filepath.Join(base, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// writeProbe writes dir/probe.json with ids and their logprobs (NaN: none).
func writeProbe(t *testing.T, dir string, ids []int32, lps []float64) {
	t.Helper()
	out := make([]*float64, len(lps))
	for i := range lps {
		if !math.IsNaN(lps[i]) {
			out[i] = &lps[i]
		}
	}
	b, _ := json.Marshal(map[string]any{"token_ids": ids, "logprobs": out})
	if err := os.WriteFile(filepath.Join(dir, weightsync.ProbeFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// greedy is one greedy completion's tokens and logprobs.
type greedy struct {
	ids []int32
	lps []float64
}

// complete asks srv for a greedy completion of prompt, with cache_salt
// when salt is set.
func complete(t *testing.T, srv vllmtest.Server, prompt []int32, salt string) greedy {
	t.Helper()
	req := map[string]any{"model": srv.Model, "prompt": prompt, "max_tokens": 8, "temperature": 0, "logprobs": 1,
		"return_token_ids": true, "seed": 1}
	if salt != "" {
		req["cache_salt"] = salt
	}
	b, _ := json.Marshal(req)
	resp, err := http.Post(srv.URL+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("completion: %s: %s", resp.Status, body)
	}
	var r struct {
		Choices []struct {
			TokenIDs []int32 `json:"token_ids"`
			Logprobs struct {
				TokenLogprobs []float64 `json:"token_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
		t.Fatalf("completion %s: %v", body, err)
	}
	return greedy{r.Choices[0].TokenIDs, r.Choices[0].Logprobs.TokenLogprobs}
}

// distance is the largest logprob difference of two completions (+Inf
// when they sampled other tokens).
func distance(a, b greedy) float64 {
	if fmt.Sprint(a.ids) != fmt.Sprint(b.ids) {
		return math.Inf(1)
	}
	d := 0.0
	for i := range a.lps {
		d = max(d, math.Abs(a.lps[i]-b.lps[i]))
	}
	return d
}

// TestDiskUpdateVLLM (issue 19, items 1 and 2) updates a real vLLM (CPU
// build, --full-weights: the dev mode, no LoRA) from disk and back,
// verified by version and checksums, and proves that no request reuses
// the prefix cache of the weights before: after the update, a prompt
// cached before it gives the same tokens and logprobs as the same prompt
// under a cache_salt never used (computed from scratch); the control, an
// update by reload_weights alone (no cache reset), gives others, so the
// test would see stale blocks.
func TestDiskUpdateVLLM(t *testing.T) {
	srv := vllmtest.Start(t, "--full-weights")
	_, model := vllmtest.Python(t)
	base, _ := filepath.Abs(model)
	root := t.TempDir()
	step1, step2 := filepath.Join(root, "step-1"), filepath.Join(root, "step-2")
	perturbed(t, base, step1, 0.05)
	perturbed(t, base, step2, 0.1)
	client, err := llm.New(llm.Options{Endpoints: []string{srv.URL}, RequestTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	ws, err := weightsync.New(weightsync.Options{Server: client, Transfer: weightsync.Disk{Reloader: client, Timeout: 5 * time.Minute}, Base: base, Model: srv.Model})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	t.Cleanup(func() { // a reused server (vllmtest.EnvStartedURL) serves the base again
		if err := client.ReloadWeights(ctx, base, 5*time.Minute); err != nil {
			t.Error(err)
		}
	})
	if err := client.CheckWeightUpdates(ctx); err != nil {
		t.Fatal(err)
	}
	prompt := make([]int32, 300) // several full cache blocks
	for i := range prompt {
		prompt[i] = int32(10 + (i*37)%2900)
	}

	// Step 0: the served weights are the base's. Only the version is set
	// when the checksums cover every parameter (a GPU); the CPU build's
	// cover only the norms and the embedding, which prove nothing of the
	// linear layers, so the base is loaded (issue 28, item 8).
	m, err := ws.Sync(ctx, 0, base)
	if err != nil {
		t.Fatal(err)
	}
	partial := m["update_checksums_not_comparable"] > 0
	if want := map[bool]float64{false: 0, true: 1}[partial]; m["update_transferred"] != want || m["update_checksums_compared"] == 0 {
		t.Errorf("step 0: %v, want %v transfers and some checksums compared", m, want)
	}
	t.Logf("step 0 (the base, verified): %v", m)
	before := complete(t, srv, prompt, "") // cached under the base weights

	m, err = ws.Sync(ctx, 1, step1)
	if err != nil {
		t.Fatal(err)
	}
	if m["update_transferred"] != 1 {
		t.Errorf("step 1: %v, want a transfer", m)
	}
	t.Logf("step 1 (update from disk): %v", m)
	reused := complete(t, srv, prompt, "")
	fresh := complete(t, srv, prompt, "fresh-1")
	if d := distance(reused, fresh); d > 1e-3 {
		t.Errorf("after the update the cached prompt gives %v, from scratch %v (distance %g): stale KV", reused, fresh, d)
	}
	if d := distance(before, fresh); d < 1e-2 {
		t.Errorf("the update changed no logprob (distance %g): the test proves nothing", d)
	}

	// Control: reload without the cache reset, and the cached prompt is
	// served from blocks of step 1's weights.
	if err := client.ReloadWeights(ctx, step2, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	stale := complete(t, srv, prompt, "")
	fresh2 := complete(t, srv, prompt, "fresh-2")
	if d := distance(stale, fresh2); d < 1e-2 {
		t.Errorf("control: without the reset the cached prompt gives the fresh answer (distance %g): the prefix cache is not in use, so the check above proves nothing", d)
	} else {
		t.Logf("control: without the cache reset the reused prefix moves the logprobs by %g", d)
	}

	// Back to step 1 through Sync: verified, the cache reset again.
	if _, err := ws.Sync(ctx, 1, step1); err != nil {
		t.Fatal(err)
	}
	if d := distance(complete(t, srv, prompt, ""), fresh); d > 1e-3 {
		t.Errorf("step 1 again: distance %g from step 1's fresh answer", d)
	}

	// The probe: the base model's own prompt logprobs (the server's, from
	// scratch) pass beside a copy of the base weights and fail beside step
	// 2's, whose checksums match the server once it holds them: the probe
	// sees what the checksums cannot.
	probeIDs := prompt[:32]
	if _, err := ws.Sync(ctx, 3, baseCopy(t, base, root)); err != nil {
		t.Fatal(err)
	}
	lps, err := client.PromptLogprobs(ctx, srv.Model, probeIDs, "probe-base")
	if err != nil {
		t.Fatal(err)
	}
	writeProbe(t, filepath.Join(root, "base-copy"), probeIDs, lps[0])
	m, err = ws.Sync(ctx, 4, filepath.Join(root, "base-copy"))
	if err != nil {
		t.Fatalf("Sync with the base's own probe: %v", err)
	}
	t.Logf("probe of the base beside the base: mean |Δ logprob| %g", m["update_probe_mean_abs_logprob_diff"])
	writeProbe(t, step2, probeIDs, lps[0])
	_, err = ws.Sync(ctx, 5, step2)
	if !errors.Is(err, weightsync.ErrMismatch) || !strings.Contains(err.Error(), "does not compute with the trainer's weights") {
		t.Errorf("Sync with a probe of other weights = %v, want the probe's mismatch", err)
	}
	if err := client.Resume(ctx); err != nil { // the failed update leaves it paused
		t.Fatal(err)
	}

	// A version that does not match is named.
	if err := client.SetWeightVersion(ctx, "7"); err != nil {
		t.Fatal(err)
	}
	sums, _ := client.WeightChecksums(ctx)
	t.Logf("the CPU build's /weight_checker reports %d parameters", len(sums[0]))
	var keys []string
	for k := range sums[0] {
		keys = append(keys, k)
	}
	t.Logf("e.g. %s", strings.Join(keys[:min(4, len(keys))], ", "))
	if err := client.ReloadWeights(ctx, step1, 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	// verify finds version 7: with every checksum it sets 1 again, with
	// the CPU build's partial set it transfers step 1 again.
	m, err = ws.Sync(ctx, 1, step1)
	if want := map[bool]float64{false: 0, true: 1}[partial]; err != nil || m["update_transferred"] != want {
		t.Errorf("Sync after a wrong version = %v, %v; want %v transfers and version 1", m, err, want)
	}
}

// TestNoDevModeVLLM: the shared server, started without the dev mode,
// is named as such before anything is paused.
func TestNoDevModeVLLM(t *testing.T) {
	srv := vllmtest.Shared(t)
	client, err := llm.New(llm.Options{Endpoints: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	err = client.CheckWeightUpdates(context.Background())
	if !errors.Is(err, llm.ErrNoRLRoutes) || !strings.Contains(err.Error(), "VLLM_SERVER_DEV_MODE=1") {
		t.Errorf("CheckWeightUpdates on a server without the dev mode = %v, want ErrNoRLRoutes naming VLLM_SERVER_DEV_MODE=1", err)
	}
}
