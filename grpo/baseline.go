package grpo

import "maps"

// RoleBaseline is the per-role reward baseline of ModeRoleBaseline, carried
// across steps. Its fields are exported and JSON-tagged so that it is stored
// as-is in state.json (State.RoleBaseline). It is not safe for concurrent
// use.
type RoleBaseline struct {
	// Values maps a role key (see DefaultRoleKey) to its baseline.
	Values map[string]float64 `json:"values"`
	// Updates counts the steps that updated each role's baseline.
	Updates map[string]int64 `json:"updates"`
}

// NewRoleBaseline returns an empty baseline.
func NewRoleBaseline() *RoleBaseline {
	return &RoleBaseline{Values: map[string]float64{}, Updates: map[string]int64{}}
}

// Value returns the baseline of role and whether it has one yet.
func (b *RoleBaseline) Value(role string) (float64, bool) {
	if b == nil || b.Updates[role] == 0 {
		return 0, false
	}
	return b.Values[role], true
}

// Update folds one step's mean reward of role into its baseline:
// b ← momentum·b + (1 − momentum)·mean, or b ← mean on the role's first
// update (no bias towards 0).
func (b *RoleBaseline) Update(role string, mean, momentum float64) {
	if b.Values == nil {
		b.Values = map[string]float64{}
	}
	if b.Updates == nil {
		b.Updates = map[string]int64{}
	}
	if old, ok := b.Value(role); ok {
		mean = momentum*old + (1-momentum)*mean
	}
	b.Values[role] = mean
	b.Updates[role]++
}

// Clone returns a deep copy of b (nil for nil).
func (b *RoleBaseline) Clone() *RoleBaseline {
	if b == nil {
		return nil
	}
	c := NewRoleBaseline()
	maps.Copy(c.Values, b.Values)
	maps.Copy(c.Updates, b.Updates)
	return c
}
