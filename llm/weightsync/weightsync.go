// Package weightsync brings every inference endpoint to one training
// step's full weights through vLLM's own RL API (served with
// VLLM_SERVER_DEV_MODE=1), and proves it:
//
//  1. check the trainer's folder against the served model (names, dtypes,
//     shapes), before anything is paused: vLLM 0.32's engine dies on a
//     reload whose shapes differ;
//  2. if the endpoints already hold exactly these weights (their version is
//     the step and their checksums are the folder's), only unpause them and
//     reset their prefix caches: a resumed update is not done twice. The
//     transfer is skipped for another version only when the checksums
//     cover every parameter (a complete verification): a partial set (the
//     CPU build's) cannot tell a step whose checksummed parameters are
//     frozen from the weights before it;
//  3. pause generation (POST /pause?mode=), transfer (a Transfer: from disk
//     by /collective_rpc reload_weights, or NCCL from the trainer), set the
//     weight version to the step (POST /update_weight_version), reset the
//     prefix cache (POST /reset_prefix_cache: no request may reuse blocks
//     computed with the old weights), verify, resume (POST /resume).
//
// Verification is never assumed: every endpoint's GET /weight_info must
// report the step, and its /weight_checker checksums must equal the ones
// computed from the files the trainer wrote (package weights), for every
// runtime parameter they can be computed for; at least one must be. On
// vLLM's CPU build that is the norms and the embedding, 10 of the tiny
// model's 18 parameters: the linear layers' weights are repacked for the
// CPU kernels and the parameters left empty (their checksum is that of no
// bytes, weights.EmptyDigest), so a linear layer's update is checked by
// the version alone there (and by the logprobs, in the vLLM test). On a
// GPU at tensor parallel size 1, every parameter is compared.
//
// Every step of an update is idempotent, so a crash anywhere in it
// (internal/crashpoint names the points) is cured by calling Sync again
// with the same step: it ends with every endpoint on exactly that step's
// weights and none paused.
package weightsync

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/crashpoint"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/llm/weights"
	"github.com/parleyhq/parley/metrics"
	"go.uber.org/zap"
)

// Server is what an update needs of the inference endpoints (the llm
// client; each call acts on every endpoint, answers come in endpoint
// order).
type Server interface {
	Endpoints() []string
	Pause(ctx context.Context, mode string) error
	Resume(ctx context.Context) error
	Paused(ctx context.Context) ([]bool, error)
	SetWeightVersion(ctx context.Context, version string) error
	WeightVersions(ctx context.Context) ([]string, error)
	WeightChecksums(ctx context.Context) ([]map[string]string, error)
	ResetPrefixCache(ctx context.Context) error
	PromptLogprobs(ctx context.Context, model string, ids []int32, salt string) ([][]float64, error)
}

// Transfer moves the weights trained on step, written to dir, into every
// endpoint's engine while it is paused.
type Transfer interface {
	// Name names the mode ("disk", "nccl") in messages.
	Name() string
	// Transfer moves the weights; it may be called again for the same step
	// after a crash.
	Transfer(ctx context.Context, step int, dir string) error
}

// Options configure a Syncer.
type Options struct {
	Server   Server
	Transfer Transfer
	// PauseMode is POST /pause's mode (llm.PauseWait by default).
	PauseMode string
	// Base is the folder of the model the endpoints were started with (the
	// trainer's base model): every step's weights must have its tensors.
	Base string
	// Version names the weight version of a step (default: its number).
	Version func(step int) string
	// Model is the served model name the probe asks (ProbeFile).
	Model string
	// ProbeTolerance bounds the mean absolute difference between the
	// probe's logprobs as the trainer computed them and as every endpoint
	// does (default 0.05).
	ProbeTolerance float64
	Logger         *zap.Logger
}

// Syncer updates the endpoints' full weights.
type Syncer struct {
	opts Options
	base weights.Folder
	log  *zap.Logger
}

// New reads the base model's tensors and returns a Syncer.
func New(o Options) (*Syncer, error) {
	if o.Server == nil || o.Transfer == nil || o.Base == "" {
		return nil, errors.New("weightsync.New: a server, a transfer and the base model's folder are required")
	}
	if o.PauseMode == "" {
		o.PauseMode = "wait"
	}
	if o.Version == nil {
		o.Version = func(step int) string { return fmt.Sprint(step) }
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ProbeTolerance <= 0 {
		o.ProbeTolerance = 0.05
	}
	base, err := weights.Read(o.Base)
	if err != nil {
		return nil, fmt.Errorf("weightsync.New: the base model (trainer.model): %w", err)
	}
	return &Syncer{opts: o, base: base, log: o.Logger}, nil
}

// ErrMismatch means an endpoint does not hold the weights it should after
// an update: another version, or checksums that differ from the trainer's.
var ErrMismatch = errors.New("the endpoint's weights are not the trainer's")

// Sync brings every endpoint to the weights trained on step (dir; step 0
// with the base model's folder is the base model) and returns the
// update's metrics (metrics.KeyUpdate…).
func (s *Syncer) Sync(ctx context.Context, step int, dir string) (map[string]float64, error) {
	t0 := time.Now()
	m := map[string]float64{}
	want, err := s.check(step, dir)
	if err != nil {
		return nil, err
	}
	version := s.opts.Version(step)
	held, complete, err := s.verify(ctx, version, want, m)
	switch {
	case err == nil:
		// Already there (a resumed update, or the base model at start).
		s.log.Debug("the endpoints already hold the step's weights", zap.Int("step", step))
		return m, s.finish(ctx, m, dir, t0, t0)
	case !errors.Is(err, ErrMismatch):
		return nil, err
	case step == 0 && !held:
		return nil, fmt.Errorf("weightsync: the endpoints do not serve the base model's weights (%s): %w; "+
			"serve trainer.model's folder (the same weights parley trains), or restart the server if it holds a run's weights", s.opts.Base, err)
	}
	pause := time.Now()
	if err := s.opts.Server.Pause(ctx, s.opts.PauseMode); err != nil {
		return nil, fmt.Errorf("weightsync step %d: %w", step, err)
	}
	crashpoint.Hit("update-paused") // paused, nothing transferred
	// Checksums that match prove the weights only when they cover every
	// parameter; else only a transfer does (it is idempotent).
	if !held || !complete {
		tt := time.Now()
		if err := s.opts.Transfer.Transfer(ctx, step, dir); err != nil {
			return nil, fmt.Errorf("weightsync step %d: %s transfer from %s: %w (the endpoints stay paused; resume the run to retry)", step, s.opts.Transfer.Name(), dir, err)
		}
		m[string(metrics.KeyUpdateTransferSeconds)] = time.Since(tt).Seconds()
		m[string(metrics.KeyUpdateTransferred)] = 1
	}
	crashpoint.Hit("update-transferred") // new weights, old version
	if err := s.opts.Server.SetWeightVersion(ctx, version); err != nil {
		return nil, fmt.Errorf("weightsync step %d: %w", step, err)
	}
	crashpoint.Hit("update-version-set") // new weights and version, cache not reset, paused
	if _, _, err := s.verify(ctx, version, want, m); err != nil {
		return nil, fmt.Errorf("weightsync step %d: after the update from %s (%s transfer): %w", step, dir, s.opts.Transfer.Name(), err)
	}
	return m, s.finish(ctx, m, dir, t0, pause)
}

// finish resets the prefix caches, resumes every endpoint and probes them
// (a paused endpoint holds the probe's request).
func (s *Syncer) finish(ctx context.Context, m map[string]float64, dir string, t0, pause time.Time) error {
	if err := s.opts.Server.ResetPrefixCache(ctx); err != nil {
		return fmt.Errorf("weightsync: %w", err)
	}
	crashpoint.Hit("update-verified") // verified and reset, not resumed
	if err := s.opts.Server.Resume(ctx); err != nil {
		return fmt.Errorf("weightsync: %w", err)
	}
	paused, err := s.opts.Server.Paused(ctx)
	if err != nil {
		return fmt.Errorf("weightsync: %w", err)
	}
	if i := slices.Index(paused, true); i >= 0 {
		return fmt.Errorf("weightsync: %s is still paused after POST /resume", s.opts.Server.Endpoints()[i])
	}
	if pause != t0 {
		m[string(metrics.KeyUpdatePauseSeconds)] = time.Since(pause).Seconds()
	}
	if err := s.probe(ctx, dir, m); err != nil {
		return err
	}
	m[string(metrics.KeyUpdateSeconds)] = time.Since(t0).Seconds()
	return nil
}

// check reads dir's tensors and checks them against the base model's.
func (s *Syncer) check(step int, dir string) (weights.Folder, error) {
	f, err := weights.Read(dir)
	if err != nil {
		return f, fmt.Errorf("weightsync step %d: the trainer's weights: %w; the trainer writes them (safetensors) with trainer.full_finetune: true before DONE", step, err)
	}
	if err := weights.CheckSame(s.base, f); err != nil {
		return f, fmt.Errorf("weightsync step %d: %w; nothing was sent to the server (vLLM's engine dies on a reload of other shapes): "+
			"the trainer must train trainer.model, the model the server serves", step, err)
	}
	return f, nil
}

// verify compares every endpoint with version and the checksums of want's
// files. held reports whether every endpoint's checksums match (whatever
// its version), complete whether they cover every parameter the endpoints
// report (none empty, none that cannot be computed from want); the error
// wraps ErrMismatch when an endpoint differs.
func (s *Syncer) verify(ctx context.Context, version string, want weights.Folder, m map[string]float64) (held, complete bool, err error) {
	tv := time.Now()
	defer func() { m[string(metrics.KeyUpdateVerifySeconds)] += time.Since(tv).Seconds() }()
	eps := s.opts.Server.Endpoints()
	sums, err := s.opts.Server.WeightChecksums(ctx)
	if err != nil {
		return false, false, fmt.Errorf("weightsync: %w", err)
	}
	var bad []string
	compared, skipped := 0, 0
	for i, got := range sums {
		keys := make([]string, 0, len(got))
		for k, v := range got {
			if v == weights.EmptyDigest {
				skipped++ // no bytes: repacked for the CPU kernels
				continue
			}
			keys = append(keys, k)
		}
		slices.Sort(keys)
		exp, skip, err := weights.Expected(want, keys)
		if err != nil {
			return false, false, fmt.Errorf("weightsync: %w", err)
		}
		if len(exp) == 0 {
			return false, false, fmt.Errorf("weightsync: none of the %d parameters %s's /weight_checker reports can be computed from %s (%s…): "+
				"the checksum check needs tensor parallel size 1 and checkpoint names the server uses", len(keys), eps[i], want.Dir, strings.Join(keys[:min(3, len(keys))], ", "))
		}
		var diff []string
		for _, k := range keys {
			if e, ok := exp[k]; ok && got[k] != e {
				diff = append(diff, k)
			}
		}
		if len(diff) > 0 {
			bad = append(bad, fmt.Sprintf("%s: %d of %d checksums differ (%s)", eps[i], len(diff), len(exp), strings.Join(diff[:min(3, len(diff))], ", ")))
		}
		compared, skipped = compared+len(exp), skipped+len(skip)
	}
	m[string(metrics.KeyUpdateChecksums)] = float64(compared)
	m[string(metrics.KeyUpdateChecksumsSkip)] = float64(skipped)
	held, complete = len(bad) == 0, skipped == 0
	vs, err := s.opts.Server.WeightVersions(ctx)
	if err != nil {
		return held, false, fmt.Errorf("weightsync: %w", err)
	}
	for i, v := range vs {
		if v != version {
			bad = append(bad, fmt.Sprintf("%s reports weight version %q, want %q", eps[i], v, version))
		}
	}
	if len(bad) > 0 {
		return held, complete, fmt.Errorf("%w: %s", ErrMismatch, strings.Join(bad, "; "))
	}
	return true, complete, nil
}

// ProbeFile is the trainer's probe beside a step's weights: token ids and
// the trainer's logprob of each given those before it (null first), at
// temperature 1. After an update every endpoint must compute the same
// (Options.ProbeTolerance): the checksums prove the parameters, the probe
// that the engine computes with them.
const ProbeFile = "probe.json"

// probe compares every endpoint's prompt logprobs of dir's probe with the
// trainer's; a folder without one (the base model) is not probed.
func (s *Syncer) probe(ctx context.Context, dir string, m map[string]float64) error {
	b, err := os.ReadFile(filepath.Join(dir, ProbeFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("weightsync: %w", err)
	}
	var p struct {
		TokenIDs []int32    `json:"token_ids"`
		Logprobs []*float64 `json:"logprobs"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.TokenIDs) < 2 || len(p.Logprobs) != len(p.TokenIDs) {
		return fmt.Errorf("weightsync: %s: not a probe (token_ids and one logprob each): %v", filepath.Join(dir, ProbeFile), err)
	}
	var salt [8]byte
	_, _ = rand.Read(salt[:])
	got, err := s.opts.Server.PromptLogprobs(ctx, s.opts.Model, p.TokenIDs, "parley-probe-"+hex.EncodeToString(salt[:]))
	if err != nil {
		return fmt.Errorf("weightsync: the probe: %w", err)
	}
	eps := s.opts.Server.Endpoints()
	worst := 0.0
	var bad []string
	for i, lps := range got {
		sum, n, mx := 0.0, 0, 0.0
		for t, want := range p.Logprobs {
			if want == nil || math.IsNaN(lps[t]) {
				continue
			}
			d := math.Abs(lps[t] - *want)
			sum, n, mx = sum+d, n+1, max(mx, d)
		}
		mean := sum / float64(max(n, 1))
		worst = max(worst, mean)
		if n == 0 || mean > s.opts.ProbeTolerance {
			bad = append(bad, fmt.Sprintf("%s: mean %.3g, max %.3g over %d tokens", eps[i], mean, mx, n))
		}
	}
	m[string(metrics.KeyUpdateProbeMeanAbs)] = worst
	if len(bad) > 0 {
		return fmt.Errorf("%w: the engine does not compute with the trainer's weights, although their checksums match: the probe's prompt logprobs differ from the trainer's (%s; train.weight_sync.probe_tolerance %g). "+
			"vLLM 0.32's CPU build reloads a tied embedding (tie_word_embeddings) but keeps computing the output head from the old copy: freeze it (trainer.extra_args: [--freeze, embed_tokens]) or serve on a GPU",
			ErrMismatch, strings.Join(bad, "; "), s.opts.ProbeTolerance)
	}
	return nil
}

// Disk is the transfer from disk: every endpoint reloads the folder in
// place (POST /collective_rpc reload_weights). The endpoints must see the
// run directory at the same path (the same machine or a shared file
// system).
type Disk struct {
	Reloader interface {
		ReloadWeights(ctx context.Context, path string, timeout time.Duration) error
	}
	// Timeout bounds one endpoint's reload (0: the client's request timeout).
	Timeout time.Duration
}

// Name is "disk".
func (Disk) Name() string { return "disk" }

// Transfer reloads dir on every endpoint.
func (d Disk) Transfer(ctx context.Context, _ int, dir string) error {
	return d.Reloader.ReloadWeights(ctx, dir, d.Timeout)
}

// SyncDir is the folder of a run directory where the NCCL transfer's
// requests and the trainer's answers lie.
const SyncDir = "weight-sync"

// NCCL is the transfer by NCCL broadcast (GPU only): parley asks, the
// trainer sends. With the endpoints paused, parley writes
// RUN/weight-sync/step-N.request ({"step": N, "endpoints": [...]}); the
// trainer (python -m parley_trainer --weight-transfer nccl) broadcasts the
// step's weights to every endpoint's workers with vLLM's trainer-side
// engine (vllm.distributed.weight_transfer.nccl_engine, which drives
// /start_weight_update, /update_weights and /finish_weight_update itself)
// and answers step-N.sent, or step-N.failed with the reason. A request
// asked again after a crash is answered again: sending is idempotent.
type NCCL struct {
	dir       string
	endpoints []string
	timeout   time.Duration
	poll      time.Duration
}

// NewNCCL returns the NCCL transfer of the run in runDir to endpoints;
// timeout bounds one step's transfer.
func NewNCCL(runDir string, endpoints []string, timeout time.Duration) *NCCL {
	return &NCCL{dir: filepath.Join(runDir, SyncDir), endpoints: endpoints, timeout: timeout, poll: 200 * time.Millisecond}
}

// Name is "nccl".
func (*NCCL) Name() string { return "nccl" }

// Transfer asks the trainer to broadcast step's weights and waits for its
// answer.
func (n *NCCL) Transfer(ctx context.Context, step int, _ string) error {
	base := filepath.Join(n.dir, fmt.Sprintf("step-%06d", step))
	for _, ext := range []string{".sent", ".failed"} {
		if err := os.Remove(base + ext); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("weightsync.NCCL: %w", err)
		}
	}
	req, err := json.Marshal(map[string]any{"step": step, "endpoints": n.endpoints})
	if err != nil {
		return fmt.Errorf("weightsync.NCCL: %w", err)
	}
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return fmt.Errorf("weightsync.NCCL: %w", err)
	}
	if err := fsutil.WriteFileAtomic(base+".request", req, 0o644); err != nil {
		return fmt.Errorf("weightsync.NCCL: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	t := time.NewTicker(n.poll)
	defer t.Stop()
	for {
		if _, err := os.Stat(base + ".sent"); err == nil {
			return os.Remove(base + ".request")
		}
		if b, err := os.ReadFile(base + ".failed"); err == nil {
			return fmt.Errorf("weightsync.NCCL: the trainer could not broadcast step %d's weights: %s", step, strings.TrimSpace(string(b)))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("weightsync.NCCL: no answer from the trainer to %s within %s (train.weight_sync.reload_timeout): "+
				"is the trainer running with --weight-transfer nccl, and vLLM with --weight-transfer-config '{\"backend\":\"nccl\"}'? %w", base+".request", n.timeout, ctx.Err())
		case <-t.C:
		}
	}
}
