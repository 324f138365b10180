package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/parleyhq/parley/config"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/llm/chat"
	"go.uber.org/zap"
)

// preflightTimeout bounds each preflight check: seconds, not the minutes
// of retries a dead server would otherwise cost.
const preflightTimeout = 30 * time.Second

// checkOut refuses to overwrite path (a file or a non-empty directory)
// unless force, and checks that its directory can be written: the one
// --force rule of every command, applied before any work.
func checkOut(path string, force bool) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	switch {
	case err == nil && !force:
		if !st.IsDir() {
			return fmt.Errorf("%s exists: pass --force to replace it", path)
		}
		if entries, _ := os.ReadDir(path); len(entries) > 0 {
			return fmt.Errorf("%s exists and is not empty: pass --force to replace what it holds", path)
		}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		// A path under a regular file (ENOTDIR) or in a directory that
		// cannot be searched: nothing can be written there.
		return fmt.Errorf("%s is not writable: %w", path, err)
	}
	dir := path
	if err != nil || !st.IsDir() {
		dir = filepath.Dir(path)
	}
	// Check the nearest directory that exists: creating the missing ones
	// now would leave them behind when the command fails later.
	for {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	f, err := os.CreateTemp(dir, ".parley-write-check-*")
	if err != nil {
		return fmt.Errorf("%s is not writable: %w", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// preflightPolicy checks once, quickly, that the policy's endpoints answer,
// are recent enough and serve the model.
func preflightPolicy(ctx context.Context, c *llm.Client, model string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	if _, err := c.Preflight(ctx, model); err != nil {
		return fmt.Errorf("policy.endpoints: %w", err)
	}
	return nil
}

// preflightJudge checks that an LLM judge's key variable is set and that
// its API answers and accepts the key (one cheap call).
func preflightJudge(ctx context.Context, cfg config.Config, log *zap.Logger) error {
	if !cfg.Judge.Kind.UsesChat() {
		return nil
	}
	if cfg.Judge.APIKeyEnv != "" && os.Getenv(cfg.Judge.APIKeyEnv) == "" {
		return fmt.Errorf("judge: config key judge.api_key_env names %s, which is not set: export the judge's API key in it", cfg.Judge.APIKeyEnv)
	}
	c, err := chat.New(judgeClient(cfg, "", log))
	if err != nil {
		return fmt.Errorf("config key judge: %w", err)
	}
	defer c.Close()
	err = c.Check(ctx)
	if errors.Is(err, chat.ErrKeyRejected) {
		if cfg.Judge.APIKeyEnv == "" {
			return fmt.Errorf("judge: config key judge.api_key_env is empty, so no key was sent: %w", err)
		}
		return fmt.Errorf("judge: config key judge.api_key_env names %s: %w", cfg.Judge.APIKeyEnv, err)
	}
	return err
}
