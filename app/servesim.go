package app

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/sim"
	"go.uber.org/zap"
)

// A game's serve-sim answers are sim's Answerer: rollout.SimAnswerer has
// its methods.
var _ sim.Answerer = rollout.SimAnswerer(nil)

// SimGames returns every registered game's serve-sim answers
// (rollout.Spec.Sim), in the registry's order, built with the options
// given as GAME.KEY=VALUE.
func SimGames(options []string) ([]sim.Answerer, error) {
	byGame := map[string]map[string]string{}
	for _, o := range options {
		kv, v, ok := strings.Cut(o, "=")
		game, k, ok2 := strings.Cut(kv, ".")
		if !ok || !ok2 || game == "" || k == "" {
			return nil, fmt.Errorf("serve-sim: --game-option %q: want GAME.KEY=VALUE", o)
		}
		if s, found := rollout.Lookup(game); !found || s.Sim == nil {
			return nil, fmt.Errorf("serve-sim: --game-option %q: no game %q with serve-sim options (games: %v)", o, game, rollout.GameNames())
		}
		if byGame[game] == nil {
			byGame[game] = map[string]string{}
		}
		byGame[game][k] = v
	}
	var out []sim.Answerer
	for _, s := range rollout.Games() {
		if s.Sim == nil {
			continue
		}
		a, err := s.Sim(byGame[s.Name])
		if err != nil {
			return nil, fmt.Errorf("serve-sim: game %s: %w", s.Name, err)
		}
		out = append(out, a)
	}
	return out, nil
}

// ServeSimOptions are `parley serve-sim`'s settings beside sim's.
type ServeSimOptions struct {
	// Addr is the listen address; APIKeyEnv names the variable holding a
	// bearer key to require.
	Addr, APIKeyEnv string
	// GameOptions are the games' serve-sim settings, GAME.KEY=VALUE.
	GameOptions []string
}

// ServeSim serves the SIMULATED vLLM server and judge, every registered
// game answering its own prompts, until ctx ends.
func ServeSim(ctx context.Context, env Env, o sim.Options, so ServeSimOptions) error {
	log := env.log()
	if so.APIKeyEnv != "" {
		o.APIKey = os.Getenv(so.APIKeyEnv)
		if o.APIKey == "" {
			return fmt.Errorf("serve-sim: --api-key-env %s is empty", so.APIKeyEnv)
		}
	}
	var err error
	if o.Games, err = SimGames(so.GameOptions); err != nil {
		return err
	}
	o.Logger = log
	srv, err := sim.New(o)
	if err != nil {
		return err
	}
	log.Info("serve-sim listening (simulator, not a real model)", zap.String("addr", so.Addr), zap.String("model", srv.Options().Model))
	return srv.ListenAndServe(ctx, so.Addr)
}
