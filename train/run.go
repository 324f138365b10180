package train

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parleyhq/parley/internal/fsutil"
	"github.com/parleyhq/parley/internal/proc"
	"go.uber.org/zap"
)

// Handshake modes.
const (
	HandshakeFile = "file"
	HandshakeHTTP = "http"
)

// Server is what a run needs of the inference server beyond loading
// adapters: its health and the models it serves (the llm client).
type Server interface {
	AdapterLoader
	Health(ctx context.Context) error
	Models(ctx context.Context) ([]string, error)
}

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
	OnURL  func(url string) []string
	Logger *zap.Logger
}

// Run trains a run end to end: it freezes the config, starts the inference
// server (when asked) and waits for it, checks the served model, starts
// the handshake server (HTTP mode) and the trainer (when asked), runs the
// loop and stops what it started.
func Run(ctx context.Context, opts RunOptions) (State, error) {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	dir := opts.Loop.Dir
	if err := dir.Create(); err != nil {
		return State{}, err
	}
	if err := freezeConfig(dir.ConfigPath(), opts.FrozenConfig); err != nil {
		return State{}, err
	}
	var children []*proc.Supervisor
	defer func() {
		for i := len(children) - 1; i >= 0; i-- {
			children[i].Stop(10 * time.Second)
		}
	}()
	srv, err := startServer(ctx, opts, log)
	if err != nil {
		return State{}, err
	}
	if srv != nil {
		children = append(children, srv)
	}
	models, err := opts.Server.Models(ctx)
	if err != nil {
		return State{}, fmt.Errorf("train.Run: list the served models: %w", err)
	}
	if !slices.Contains(models, opts.Model) {
		return State{}, fmt.Errorf("train.Run: policy.model %q is not served by policy.endpoints (they serve %v)", opts.Model, models)
	}

	trainerArgs, hint, env := opts.TrainerCommand, opts.TrainerHint, []string(nil)
	if opts.Handshake == HandshakeHTTP {
		hs, extra, tokenEnv, err := startHandshake(opts, log)
		if err != nil {
			return State{}, err
		}
		defer hs.Close()
		if len(trainerArgs) > 0 {
			trainerArgs = append(slices.Clone(trainerArgs), extra...)
		}
		hint = append(slices.Clone(hint), extra...)
		env = append(env, tokenEnv)
	}
	loop := opts.Loop
	loop.Adapters = opts.Server
	if len(trainerArgs) > 0 {
		tr, err := proc.Start(proc.Options{Name: "trainer", Argv: trainerArgs, Env: env,
			LogPath: filepath.Join(dir.Root(), "trainer.out"), Restart: true, MaxRestarts: 10, Logger: log})
		if err != nil {
			return State{}, err
		}
		children = append(children, tr)
		loop.TrainerAlive, loop.TrainerGone = tr.Alive, tr.GaveUp
	} else {
		log.Info("waiting for an external trainer; start it with", zap.Strings("command", hint))
	}
	l, err := NewLoop(loop)
	if err != nil {
		return State{}, err
	}
	if err := l.Run(ctx); err != nil {
		return l.State(), err
	}
	return l.State(), nil
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
	srv, err := proc.Start(proc.Options{Name: "inference server", Argv: opts.ServerCommand,
		LogPath: logPath, Restart: true, MaxRestarts: 5, Logger: log})
	if err != nil {
		return nil, err
	}
	hctx, cancel := context.WithTimeout(ctx, opts.ServerStartTimeout)
	err = srv.WaitHealthy(hctx, opts.Server.Health, 500*time.Millisecond)
	cancel()
	if err != nil {
		srv.Stop(10 * time.Second)
		return nil, fmt.Errorf("train.Run: inference server (train.server_command) never became healthy: %w; see %s", err, logPath)
	}
	return srv, nil
}

// startHandshake starts the HTTP handshake server and returns the trainer
// flags that point to it and the environment entry that passes the token.
func startHandshake(opts RunOptions, log *zap.Logger) (*HandshakeServer, []string, string, error) {
	token := opts.Token
	if token == "" {
		if len(opts.TrainerCommand) == 0 {
			return nil, nil, "", fmt.Errorf("train.Run: the HTTP handshake needs a bearer token in %s (train.token_env) that the remote trainer also has", opts.TokenEnv)
		}
		var err error
		if token, err = NewToken(); err != nil {
			return nil, nil, "", err
		}
	}
	hs, err := NewHandshakeServer(HandshakeOptions{Dir: opts.Loop.Dir.Root(), Token: token, Addr: opts.HTTPAddr, Logger: log.Named("handshake")})
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
