package multiparty

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/multiparty/scenario"
	"github.com/parleyhq/parley/rollout/multiparty/trust"
)

// Plan lays out series for rollout.RunSeries: for each scenario type among
// prompts and each k < n, one sequence of cfg.SeriesLength games (rows of
// that type, drawn without repeats until the type's rows run out, seeded
// by seed, type and k) and one set of party names; then one series per
// trust condition of cfg (Config.Plan) over those same games and names,
// which starts from the condition's fresh trust state. Conditions are thus
// paired: series "<type>-<condition>-k007" of every condition play the
// same scenarios in the same order, with the same seeds (SeedKey).
func Plan(cfg Config, prompts []dataset.Prompt, n int, seed int64) ([]rollout.Series, error) {
	conds, err := cfg.Plan()
	if err != nil {
		return nil, fmt.Errorf("multiparty.Plan: %w", err)
	}
	if n <= 0 {
		return nil, fmt.Errorf("multiparty.Plan: %d series per condition", n)
	}
	byType := map[string][]dataset.Prompt{}
	for _, p := range prompts {
		s, err := scenario.FromPrompt(p)
		if err != nil {
			return nil, fmt.Errorf("multiparty.Plan: %w", err)
		}
		byType[s.Type] = append(byType[s.Type], p)
	}
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Strings(types)
	if len(types) == 0 {
		return nil, fmt.Errorf("multiparty.Plan: no scenarios")
	}
	var out []rollout.Series
	for _, typ := range types {
		rows := byType[typ]
		roles, _, err := scenario.RolesOf(typ)
		if err != nil {
			return nil, fmt.Errorf("multiparty.Plan: %w", err)
		}
		for k := 0; k < n; k++ {
			ks := rollout.DeriveSeed(seed, "multiparty/"+typ, int64(k))
			games := drawGames(rows, cfg.SeriesLength, ks)
			names := AssignNames(roles, ks)
			for _, c := range conds {
				init, err := json.Marshal(trust.NewState(c, names))
				if err != nil {
					return nil, fmt.Errorf("multiparty.Plan: %w", err)
				}
				out = append(out, rollout.Series{ID: SeriesID(typ, c, k), Games: games, Init: init, SeedKey: fmt.Sprintf("%s-k%03d", typ, k)})
			}
		}
	}
	return out, nil
}

// SeriesID names series k of a type and condition: "2hb2g-brs-s_p-k003",
// "1hb3g-none-k000".
func SeriesID(typ string, s trust.Settings, k int) string {
	c := s.Condition
	if s.Updates() {
		c = s.Method + "-" + s.Condition
	}
	return strings.ToLower(fmt.Sprintf("%s-%s-k%03d", typ, c, k))
}

// drawGames draws n rows, cycling through seeded shuffles of rows.
func drawGames(rows []dataset.Prompt, n int, seed int64) []dataset.Prompt {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x67616d6573))
	out := make([]dataset.Prompt, 0, n)
	var perm []int
	for len(out) < n {
		if len(perm) == 0 {
			perm = rng.Perm(len(rows))
		}
		out = append(out, rows[perm[0]])
		perm = perm[1:]
	}
	return out
}
