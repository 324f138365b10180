package rollout

import "testing"

// TestGroupPlayers: a pooled role gets one member per group, the same for
// every rollout of the group and every run with the same seed, and the
// groups spread over the pool.
func TestGroupPlayers(t *testing.T) {
	players := map[string]Player{"holder": {Kind: "trained"}}
	pool := map[string][]Player{"requester": {{Kind: "base", Model: "a"}, {Kind: "adapter", Model: "b"}, {Kind: "scripted", Model: "c"}}}
	seen := map[string]int{}
	for g := 0; g < 60; g++ {
		id := GroupID(3, g)
		p1 := GroupPlayers(players, pool, 11, id)
		p2 := GroupPlayers(players, pool, 11, id)
		if p1["requester"].Model != p2["requester"].Model || p1["holder"].Kind != "trained" {
			t.Fatalf("group %s: %v then %v", id, p1, p2)
		}
		seen[p1["requester"].Model]++
	}
	if len(seen) != 3 || seen["a"] < 10 || seen["b"] < 10 || seen["c"] < 10 {
		t.Errorf("60 groups drew %v", seen)
	}
	if got := GroupPlayers(players, nil, 1, "g"); len(got) != 1 {
		t.Errorf("no pools: %v", got)
	}
	if len(players) != 1 {
		t.Error("GroupPlayers changed its input")
	}
}
