// Package draw names the rules by which a league draws a group's opponent
// (roles.<role>.league.draw). The names live in this leaf package so that
// config validates them without importing league, and through it the
// league's figures and gonum's plot; league draws by the same names.
package draw

// The draw rules.
const (
	// Uniform draws every available member alike (the default).
	Uniform = "uniform"
	// Latest draws the newest snapshot (uniform over the frozen members
	// before the first snapshot is available).
	Latest = "latest"
	// PFSP weighs a member by (1 − p)^power, p the trained policy's
	// estimated win probability against it.
	PFSP = "pfsp"
)

// Rules lists the draw rules, the default first.
var Rules = []string{Uniform, Latest, PFSP}
