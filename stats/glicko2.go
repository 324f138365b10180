package stats

import "math"

// Glicko-2 (Glickman, "Example of the Glicko-2 system", 2013): a rating
// with a deviation (RD, the rating's uncertainty) and a volatility (σ, how
// erratic the player's form is). A rating period's games move the rating
// by an amount that shrinks as the RD does; a player who does not play in
// a period keeps its rating and its RD grows by σ, so a rarely met
// opponent becomes uncertain again. parley's league rates its members with
// it (package league): a snapshot that just joined starts uncertain.
//
// No maintained Go library implements it with the volatility iteration
// of the 2013 paper (the Illinois algorithm), so it lives here, tested
// against the paper's worked example.

// glickoScale converts between the Glicko scale (1500 ± RD) and the
// Glicko-2 scale (μ, φ): 400/ln 10.
const glickoScale = 173.7178

// Glicko2 defaults: a new player's rating, deviation and volatility, and
// the system constant τ (the paper suggests 0.3 to 1.2).
const (
	Glicko2Start = 1500
	Glicko2RD    = 350
	Glicko2Sigma = 0.06
	Glicko2Tau   = 0.5
)

// Glicko2Rating is a player's rating on the Glicko scale: R (1500 for a
// new player), RD (350) and the volatility Sigma (0.06).
type Glicko2Rating struct {
	R     float64 `json:"r"`
	RD    float64 `json:"rd"`
	Sigma float64 `json:"sigma"`
}

// NewGlicko2 is a new player's rating (1500, 350, 0.06).
func NewGlicko2() Glicko2Rating {
	return Glicko2Rating{R: Glicko2Start, RD: Glicko2RD, Sigma: Glicko2Sigma}
}

// Glicko2Game is one game of a rating period against an opponent rated
// Opponent at the period's start: Score is 1 a win, ½ a draw, 0 a loss
// (any value between for a graded outcome).
type Glicko2Game struct {
	Opponent Glicko2Rating
	Score    float64
}

// glickoG is g(φ) = 1/√(1 + 3φ²/π²).
func glickoG(phi float64) float64 { return 1 / math.Sqrt(1+3*phi*phi/(math.Pi*math.Pi)) }

// glickoE is E(μ, μj, φj), the expected score against opponent j.
func glickoE(mu, muJ, phiJ float64) float64 {
	return 1 / (1 + math.Exp(-glickoG(phiJ)*(mu-muJ)))
}

// Glicko2Expected is p's expected score against q, the chance p wins:
// Glicko's E with both deviations combined, g(√(φp² + φq²)), so that an
// uncertain rating on either side pulls the estimate toward ½.
func Glicko2Expected(p, q Glicko2Rating) float64 {
	phi := math.Hypot(p.RD, q.RD) / glickoScale
	return glickoE((p.R-Glicko2Start)/glickoScale, (q.R-Glicko2Start)/glickoScale, phi)
}

// Glicko2Update is p's rating after a rating period with games (the
// opponents' ratings as they were at the period's start) and system
// constant tau (≤ 0: Glicko2Tau). A period without games leaves R and
// Sigma and grows RD: √(φ² + σ²), capped at the new-player RD.
func Glicko2Update(p Glicko2Rating, games []Glicko2Game, tau float64) Glicko2Rating {
	if tau <= 0 {
		tau = Glicko2Tau
	}
	mu, phi, sigma := (p.R-Glicko2Start)/glickoScale, p.RD/glickoScale, p.Sigma
	if len(games) == 0 {
		phi = math.Min(math.Sqrt(phi*phi+sigma*sigma), Glicko2RD/glickoScale)
		return Glicko2Rating{R: p.R, RD: phi * glickoScale, Sigma: sigma}
	}
	var invV, sum float64
	for _, g := range games {
		muJ, phiJ := (g.Opponent.R-Glicko2Start)/glickoScale, g.Opponent.RD/glickoScale
		gj, e := glickoG(phiJ), glickoE(mu, muJ, phiJ)
		invV += gj * gj * e * (1 - e)
		sum += gj * (g.Score - e)
	}
	v := 1 / invV
	delta := v * sum
	sigma = glicko2Volatility(delta, phi, v, sigma, tau)
	phiStar := math.Sqrt(phi*phi + sigma*sigma)
	phi = 1 / math.Sqrt(1/(phiStar*phiStar)+1/v)
	mu += phi * phi * sum
	return Glicko2Rating{R: mu*glickoScale + Glicko2Start, RD: phi * glickoScale, Sigma: sigma}
}

// glicko2Volatility is step 5 of the paper: the new volatility, the root
// of f by the Illinois algorithm (ε = 10⁻⁶).
func glicko2Volatility(delta, phi, v, sigma, tau float64) float64 {
	const eps = 1e-6
	a := math.Log(sigma * sigma)
	f := func(x float64) float64 {
		ex := math.Exp(x)
		d := phi*phi + v + ex
		return ex*(delta*delta-phi*phi-v-ex)/(2*d*d) - (x-a)/(tau*tau)
	}
	A := a
	var B float64
	if delta*delta > phi*phi+v {
		B = math.Log(delta*delta - phi*phi - v)
	} else {
		k := 1.0
		for f(a-k*tau) < 0 {
			k++
		}
		B = a - k*tau
	}
	fA, fB := f(A), f(B)
	for i := 0; math.Abs(B-A) > eps && i < 100; i++ {
		C := A + (A-B)*fA/(fB-fA)
		fC := f(C)
		if fC*fB <= 0 {
			A, fA = B, fB
		} else {
			fA /= 2
		}
		B, fB = C, fC
	}
	return math.Exp(A / 2)
}
