package stats

import (
	"math"
	"math/rand/v2"
)

// EloGame is one game between a requester and a holder, rated per role:
// a requester's rating is only ever compared with holders' and the other
// way round. Score is the requester's result: 1 a win, ½ a draw, 0 a
// loss.
type EloGame struct {
	Requester, Holder string
	Score             float64
}

// EloOptions are the rating constants.
type EloOptions struct {
	// Start is every rating's initial value (default 1500).
	Start float64
	// K is the update step (default 32).
	K float64
	// Permutations is the number of random game orders EloAverage
	// averages over (default 1000).
	Permutations int
	// Seed seeds the orders.
	Seed uint64
}

func (o EloOptions) withDefaults() EloOptions {
	if o.Start == 0 {
		o.Start = 1500
	}
	if o.K == 0 {
		o.K = 32
	}
	if o.Permutations <= 0 {
		o.Permutations = 1000
	}
	return o
}

// EloRatings are the ratings of each agent in each role.
type EloRatings struct {
	Requester, Holder map[string]float64
}

// Elo rates the games in the given order (nil: as listed): the
// requester's expected score is 1/(1+10^((H−R)/400)), and both ratings
// move by K × (score − expected), in opposite directions.
func Elo(games []EloGame, order []int, opts EloOptions) EloRatings {
	opts = opts.withDefaults()
	r := EloRatings{Requester: map[string]float64{}, Holder: map[string]float64{}}
	for _, g := range games {
		r.Requester[g.Requester] = opts.Start
		r.Holder[g.Holder] = opts.Start
	}
	step := func(g EloGame) {
		rq, hd := r.Requester[g.Requester], r.Holder[g.Holder]
		e := 1 / (1 + math.Pow(10, (hd-rq)/400))
		r.Requester[g.Requester] = rq + opts.K*(g.Score-e)
		r.Holder[g.Holder] = hd - opts.K*(g.Score-e)
	}
	if order == nil {
		for _, g := range games {
			step(g)
		}
	} else {
		for _, i := range order {
			step(games[i])
		}
	}
	return r
}

// EloAverage averages the ratings over random orders of the games
// (opts.Permutations of them, seeded by opts.Seed), so that the result
// does not depend on the order the games happened to be played in.
func EloAverage(games []EloGame, opts EloOptions) EloRatings {
	opts = opts.withDefaults()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x656c6f))
	orders := make([][]int, opts.Permutations)
	for i := range orders {
		orders[i] = rng.Perm(len(games))
	}
	return EloOver(games, orders, opts)
}

// EloOver averages the ratings over the given orders.
func EloOver(games []EloGame, orders [][]int, opts EloOptions) EloRatings {
	avg := EloRatings{Requester: map[string]float64{}, Holder: map[string]float64{}}
	for _, o := range orders {
		r := Elo(games, o, opts)
		for k, v := range r.Requester {
			avg.Requester[k] += v / float64(len(orders))
		}
		for k, v := range r.Holder {
			avg.Holder[k] += v / float64(len(orders))
		}
	}
	return avg
}
