package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/handshake"
	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/proc"
	"github.com/parleyhq/parley/llm"
	"go.uber.org/zap"
)

// Handshake modes.
const (
	HandshakeFile = "file"
	HandshakeHTTP = "http"
)

// Server is what a run needs of the inference server beyond loading
// adapters: its health, a preflight that checks it serves the model and
// reports its version, and a check that it can load adapters at run time
// (the llm client).
type Server interface {
	AdapterLoader
	// Health checks that every endpoint answers.
	Health(ctx context.Context) error
	// SetStarting quiets the warnings of endpoints found down while the
	// server parley started comes up (on) and ends that (off).
	SetStarting(on bool)
	// Preflight checks that every endpoint serves model and returns what
	// each is (its version, its models).
	Preflight(ctx context.Context, model string) ([]llm.ServerInfo, error)
	// CheckLoRA checks that the endpoints load adapters at run time.
	CheckLoRA(ctx context.Context) error
	// CheckWeightUpdates checks that the endpoints serve vLLM's RL routes
	// (full weights: LoopOptions.Weights).
	CheckWeightUpdates(ctx context.Context) error
}

// ServerFile is the run directory's record of the inference servers of the
// last start: their versions and models, and the command parley started.
const ServerFile = "server.json"

// maxEngineRestarts bounds the restarts of a dead inference engine in one
// run (parley restarts only a server it started).
const maxEngineRestarts = 3

// maxTrainerRestarts bounds the restarts of a trainer parley started that
// crashes again and again without completing a step.
const maxTrainerRestarts = 3

// RunOptions configure Run: the loop, and the processes and servers around
// it that parley may start.
type RunOptions struct {
	// Loop configures the training loop; Run sets its TrainerAlive and
	// TrainerGone when it starts the trainer, and its Adapters to Server.
	Loop LoopOptions
	// FrozenConfig is the resolved config, written to config.yaml once at
	// the start of a new run.
	FrozenConfig []byte
	// Server is the policy's inference server; Model the model it must
	// serve.
	Server Server
	Model  string
	// ServerCommand, if set, starts the inference server (restarted when it
	// dies) and waits up to ServerStartTimeout for its health.
	ServerCommand      []string
	ServerStartTimeout time.Duration
	// TrainerCommand, if set, is the whole trainer command line, started
	// and restarted by parley; otherwise the user starts the trainer and
	// TrainerHint is logged to say how.
	TrainerCommand []string
	TrainerHint    []string
	// Handshake is HandshakeFile or HandshakeHTTP; for HTTP, HTTPAddr is
	// the listen address, Token the bearer token (a new one when empty and
	// parley starts the trainer) and TokenEnv the variable that passes it
	// to the trainer.
	Handshake string
	HTTPAddr  string
	Token     string
	TokenEnv  string
	// OnURL, if set, is called with the handshake server's URL (HTTP mode)
	// before the trainer starts, so its command line can be completed.
	OnURL func(url string) []string
	// Secrets names the environment variables the processes parley starts
	// must not see (the judge's and the generator's keys); ServerEnv and
	// TrainerEnv name those they need although they look secret (the
	// policy's API key for the server; tracking keys for the trainer).
	Secrets               []string
	ServerEnv, TrainerEnv []string
	Logger                *zap.Logger
}

// childEnv is parley's environment without the variables a child must not
// see: those named in secrets, and any that looks like a secret (a key,
// token, secret, password or credential) unless allowed. Hugging Face's
// token stays: the server and the trainer may need it to load the model.
func childEnv(secrets, allow []string) []string {
	allow = append(slices.Clone(allow), "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
	return proc.FilterEnv(os.Environ(), func(name string) bool {
		if slices.Contains(allow, name) {
			return true
		}
		if slices.Contains(secrets, name) {
			return false
		}
		up := strings.ToUpper(name)
		for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"} {
			if strings.Contains(up, w) {
				return false
			}
		}
		return true
	})
}

// cleanTemps removes what interrupted atomic writes left in the run
// directory (.state.json.tmp-*, …), saying so.
func cleanTemps(dir dataset.RunDir, log *zap.Logger) error {
	for _, d := range []string{dir.Root(), dir.BatchesDir(), dir.RolloutsDir(), dir.EvalsDir()} {
		removed, err := fsutil.RemoveTemps(d)
		if err != nil {
			return err
		}
		if len(removed) > 0 {
			log.Info("removed the temporary files of interrupted writes", zap.String("dir", d), zap.Strings("files", removed))
		}
	}
	return nil
}

// trainerUsageExit is the trainer's exit status for a bad flag or config
// (argparse's, and parley_trainer's own): parley does not restart it.
const trainerUsageExit = 2

// Run trains a run end to end: it freezes the config, starts the inference
// server (when asked) and waits for it, checks the served model, starts
// the handshake server (HTTP mode) and the trainer (when asked), runs the
// loop and stops what it started.
func Run(ctx context.Context, opts RunOptions) (State, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if err := prepareDir(opts.Loop.Dir, opts.FrozenConfig, log); err != nil {
		return State{}, err
	}
	srv, err := startServer(ctx, opts, log)
	if err != nil {
		return State{}, err
	}
	if srv != nil {
		defer srv.Stop(10 * time.Second)
	}
	if err := preflight(ctx, opts); err != nil {
		return State{}, err
	}
	loop, stopTrainer, err := startTrainer(opts, log)
	defer stopTrainer()
	if err != nil {
		return State{}, err
	}
	return runLoop(ctx, loop, srv, opts, log)
}

// prepareDir creates the run directory, removes what interrupted writes
// left in it and freezes the config of a new run.
func prepareDir(dir dataset.RunDir, frozen []byte, log *zap.Logger) error {
	if err := dir.Create(); err != nil {
		return err
	}
	if err := cleanTemps(dir, log); err != nil {
		return err
	}
	return freezeConfig(dir.ConfigPath(), frozen)
}

// startTrainer starts the HTTP handshake server (HTTP mode) and the
// trainer when parley starts it, or logs how to start one, and returns the
// loop's options wired to them (the adapters loaded into opts.Server, the
// trainer's health). stop closes the handshake server, then stops the
// trainer; it is to be called even when startTrainer fails.
func startTrainer(opts RunOptions, log *zap.Logger) (loop LoopOptions, stop func(), err error) {
	var hs *handshake.Server
	var tr *proc.Supervisor
	stop = func() {
		if hs != nil {
			hs.Close()
		}
		if tr != nil {
			tr.Stop(10 * time.Second)
		}
	}
	loop = opts.Loop
	loop.Adapters = opts.Server
	trainerArgs, hint, env := opts.TrainerCommand, opts.TrainerHint, []string(nil)
	if opts.Handshake == HandshakeHTTP {
		var extra []string
		var tokenEnv string
		if hs, extra, tokenEnv, err = startHandshake(opts, log); err != nil {
			return loop, stop, err
		}
		if len(trainerArgs) > 0 {
			trainerArgs = append(slices.Clone(trainerArgs), extra...)
		}
		hint = append(slices.Clone(hint), extra...)
		env = append(env, tokenEnv)
	}
	if len(trainerArgs) == 0 {
		log.Info("waiting for an external trainer; start it with: " + shellLine(hint))
		return loop, stop, nil
	}
	tr, err = proc.Start(proc.Options{Name: "trainer", Argv: trainerArgs, Env: env, Environ: childEnv(opts.Secrets, opts.TrainerEnv),
		LogPath: filepath.Join(opts.Loop.Dir.Root(), "trainer.out"), Restart: true, MaxRestarts: maxTrainerRestarts,
		FatalExitCodes: []int{trainerUsageExit}, Logger: log})
	if err != nil {
		return loop, stop, err
	}
	loop.TrainerAlive, loop.TrainerGone = tr.Alive, tr.GaveUp
	onStep := loop.OnStep
	loop.OnStep = func(m map[string]any) {
		tr.ResetRestarts() // a completed step is progress: the budget is for crashes in a row
		if onStep != nil {
			onStep(m)
		}
	}
	return loop, stop, nil
}

// runLoop runs the loop to its end. When the inference engine parley
// started (srv) dies (vLLM's EngineDeadError), it restarts it, at most
// maxEngineRestarts times, and goes on from the state: the step in
// progress had written nothing and is sampled again.
func runLoop(ctx context.Context, loop LoopOptions, srv *proc.Supervisor, opts RunOptions, log *zap.Logger) (State, error) {
	for restarts := 0; ; restarts++ {
		l, err := NewLoop(loop)
		if err != nil {
			return State{}, err
		}
		err = l.Run(ctx)
		if err == nil || srv == nil || ctx.Err() != nil || restarts >= maxEngineRestarts ||
			!(errors.Is(err, llm.ErrEngineDead) || errors.Is(err, llm.ErrNotRunning)) {
			return l.State(), err
		}
		log.Warn("the inference engine died; restarting it", zap.Int("restart", restarts+1), zap.Error(err))
		srv.Kill(10 * time.Second)
		if err := waitHealthy(ctx, srv, opts); err != nil {
			return l.State(), err
		}
		if err := preflight(ctx, opts); err != nil {
			return l.State(), err
		}
	}
}

// preflight checks the inference servers once (health, version, the
// model, runtime LoRA loading or, with full weights, the RL routes: each
// step's adapter or weights are loaded into them) and
// records what they are in the run directory.
func preflight(ctx context.Context, opts RunOptions) error {
	infos, err := opts.Server.Preflight(ctx, opts.Model)
	if err != nil {
		return fmt.Errorf("train.Run: policy.endpoints: %w", err)
	}
	check := opts.Server.CheckLoRA
	if opts.Loop.Weights != nil {
		check = opts.Server.CheckWeightUpdates
	}
	if err := check(ctx); err != nil {
		return fmt.Errorf("train.Run: policy.endpoints: %w", err)
	}
	b, err := json.MarshalIndent(map[string]any{"servers": infos, "server_command": opts.ServerCommand}, "", "  ")
	if err != nil {
		return fmt.Errorf("train.Run: %w", err)
	}
	return fsutil.WriteFileAtomic(filepath.Join(opts.Loop.Dir.Root(), ServerFile), append(b, '\n'), 0o644)
}

// freezeConfig writes the config of a new run; an existing one is kept.
func freezeConfig(path string, b []byte) error {
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := fsutil.WriteFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("train.Run: freeze config: %w", err)
	}
	return nil
}

// startServer starts the inference server when asked and waits for its
// health; otherwise it checks the server is up.
func startServer(ctx context.Context, opts RunOptions, log *zap.Logger) (*proc.Supervisor, error) {
	if len(opts.ServerCommand) == 0 {
		if err := opts.Server.Health(ctx); err != nil {
			return nil, fmt.Errorf("train.Run: the policy server is not healthy (policy.endpoints): %w", err)
		}
		return nil, nil
	}
	logPath := filepath.Join(opts.Loop.Dir.Root(), "server.log")
	srv, err := proc.Start(proc.Options{Name: "inference server", Argv: opts.ServerCommand, Environ: childEnv(opts.Secrets, opts.ServerEnv),
		LogPath: logPath, Restart: true, MaxRestarts: 5, Logger: log})
	if err != nil {
		return nil, err
	}
	if err := waitHealthy(ctx, srv, opts); err != nil {
		srv.Stop(10 * time.Second)
		return nil, err
	}
	return srv, nil
}

// waitHealthy waits up to ServerStartTimeout for the server parley started
// (or restarted), without the client's warnings that it is down: a server
// that never comes up is this error.
func waitHealthy(ctx context.Context, srv *proc.Supervisor, opts RunOptions) error {
	hctx, cancel := context.WithTimeout(ctx, opts.ServerStartTimeout)
	defer cancel()
	opts.Server.SetStarting(true)
	defer opts.Server.SetStarting(false)
	if err := srv.WaitHealthy(hctx, opts.Server.Health, 500*time.Millisecond); err != nil {
		return fmt.Errorf("train.Run: inference server (train.server_command) never became healthy: %w; see %s",
			err, filepath.Join(opts.Loop.Dir.Root(), "server.log"))
	}
	return nil
}

// startHandshake starts the HTTP handshake server and returns the trainer
// flags that point to it and the environment entry that passes the token.
func startHandshake(opts RunOptions, log *zap.Logger) (*handshake.Server, []string, string, error) {
	token := opts.Token
	if token == "" {
		if len(opts.TrainerCommand) == 0 {
			return nil, nil, "", fmt.Errorf("train.Run: the HTTP handshake needs a bearer token in %s (train.token_env) that the remote trainer also has", opts.TokenEnv)
		}
		var err error
		if token, err = handshake.NewToken(); err != nil {
			return nil, nil, "", err
		}
	}
	hs, err := handshake.NewServer(handshake.Options{Dir: opts.Loop.Dir.Root(), Token: token, Addr: opts.HTTPAddr, Logger: log.Named("handshake")})
	if err != nil {
		return nil, nil, "", err
	}
	log.Info("handshake server listening", zap.String("url", hs.URL()))
	var extra []string
	if opts.OnURL != nil {
		extra = opts.OnURL(hs.URL())
	}
	return hs, extra, opts.TokenEnv + "=" + token, nil
}

// shellLine renders argv as one line a POSIX shell reads back as argv.
func shellLine(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.IndexFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r))
		}) < 0 {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
