// Package schedule names a tournament's schedules (a tournament file's
// schedule). The names live in this leaf package so that config validates
// them without importing eval/tournament, and through it the report's
// figures and gonum's plot; eval/tournament schedules by the same names.
package schedule

// The schedules.
const (
	// Alternate: one game per unordered pair per round and condition, seats
	// alternating with the round and swapped between the conditions, so
	// every ordered pairing plays `rounds` games over two conditions (seed
	// 001's table 9: 15 agents, 5 rounds, 1,050 games).
	Alternate = "alternate"
	// Both: every unordered pair meets in both seat assignments every round
	// and condition (twice the games: 2,100 at 15 agents and 5 rounds).
	Both = "both"
)

// Names lists the schedules, the default first.
var Names = []string{Alternate, Both}
