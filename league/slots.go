package league

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// Loader loads and unloads LoRA adapters on the inference server (the llm
// client does, on every endpoint; both calls are idempotent).
type Loader interface {
	LoadLoRA(ctx context.Context, name, path string) error
	UnloadLoRA(ctx context.Context, name string) error
}

// Serve makes the adapters of the snapshots step drew (draws, one member
// ID per group) loaded, and keeps at most MaxLoaded of the league's
// adapters loaded: the least recently drawn beyond it are unloaded, never
// one this step drew nor keep (the trained policy's adapter, which the
// loop serves). Every drawn adapter is asked for, so a server restarted
// since has it again; only one the league did not hold counts as a load.
// A member whose adapter fails to load is marked Skipped and returned:
// the caller draws again without it. Unload failures are returned as
// warnings, the adapter forgotten.
func (r *Role) Serve(ctx context.Context, l Loader, step int, draws []string, o Options, keep string) (failed []string, warnings []error) {
	o = o.WithDefaults()
	need := map[string]bool{}
	for _, id := range draws {
		m := r.Member(id)
		if m == nil || m.Model == "" || need[m.Model] {
			continue
		}
		need[m.Model] = true
		if err := l.LoadLoRA(ctx, m.Model, m.Path); err != nil {
			m.Skipped = fmt.Sprintf("adapter %s from %s does not load: %v", m.Model, m.Path, err)
			failed = append(failed, m.ID)
			delete(need, m.Model)
			continue
		}
		i := slices.IndexFunc(r.Loaded, func(s Slot) bool { return s.Model == m.Model })
		if i < 0 {
			r.Loaded = append(r.Loaded, Slot{Model: m.Model, LastStep: step})
			if m.Model != keep {
				r.Loads++
				r.LoadsTotal++
			}
		} else {
			r.Loaded[i].LastStep = step
		}
	}
	if len(failed) > 0 {
		return failed, nil
	}
	sort.SliceStable(r.Loaded, func(i, j int) bool { return r.Loaded[i].LastStep < r.Loaded[j].LastStep })
	for len(r.Loaded) > o.MaxLoaded {
		i := slices.IndexFunc(r.Loaded, func(s Slot) bool { return !need[s.Model] && s.Model != keep })
		if i < 0 {
			break // the step needs them all
		}
		name := r.Loaded[i].Model
		r.Loaded = slices.Delete(r.Loaded, i, i+1)
		r.Unloads++
		r.UnloadsTotal++
		if err := l.UnloadLoRA(ctx, name); err != nil {
			warnings = append(warnings, fmt.Errorf("league: role %s: unload %s: %w", r.Role, name, err))
		}
	}
	return nil, warnings
}

// Holds reports whether the league keeps adapter name loaded.
func (s *State) Holds(name string) bool {
	for _, r := range s.Roles {
		for _, sl := range r.Loaded {
			if sl.Model == name {
				return true
			}
		}
	}
	return false
}
