package rollout

import "github.com/parleyhq/parley/dataset"

// Tournament is what a game adds to `parley tournament`: a round robin
// among agents in which every pair meets with each agent in each of the
// game's two seats, under each of its conditions, for a number of rounds
// (seed 001's tournament). eval/tournament schedules, plays, records and
// resumes the games; the game says what its seats and conditions are and
// analyses the records.
type Tournament struct {
	// Seats are the game's two roles. Seats[0] is the seat a report ranks
	// by robustness (seed 001's holder), Seats[1] the other (its
	// requester).
	Seats [2]string
	// Cooperative reports that both seats earn one score (seed 000's
	// deliberation): no seat beats the other, and cross-play reads its
	// matrix as partners'.
	Cooperative bool
	// Conditions are the conditions a tournament may play, in their
	// default order (seed 001's framings), and Condition returns a
	// curriculum row's: each condition cycles through its own rows. A game
	// without conditions leaves both nil; its rows are all played under
	// the one condition "".
	Conditions []string
	Condition  func(p dataset.Prompt) (string, error)
	// Files, if set, returns the files the game reads besides its section
	// and the curriculum (seed 001's prompt templates), in a fixed order,
	// and a phrase saying where they come from ("the embedded prompts"): a
	// tournament freezes them in its directory at the first start and
	// refuses to resume when they changed. Their hash (TournamentReport.
	// FilesSHA256) is the SHA-256 of one "name sha256" line per file, in
	// this order.
	Files func(section any) (files []File, where string, err error)
	// Analysis, if set, returns the game's analysis settings holding their
	// defaults, as a pointer to a struct whose yaml-tagged fields are
	// top-level keys of a tournament file (seed 001: analysis, cohorts). A
	// Validate(agents []string) error method on it is called with the
	// agents' names.
	Analysis func() any
	// Report analyses a tournament's games: the report's markdown, with
	// its figures written into in.Dir, and a value saved beside it as
	// analysis.json.
	Report func(in TournamentReport) (markdown string, analysis any, err error)
}

// TournamentReport is what a game's tournament report is made from.
type TournamentReport struct {
	// Name names the tournament (its directory's base name); Dir is the
	// report's folder, where figures go.
	Name, Dir string
	// Section is the game's section and Analysis its analysis settings
	// (the values Spec.Config and Tournament.Analysis returned, decoded).
	Section, Analysis any
	// Seed seeds the tournament's games and any resampling of the report.
	Seed int64
	// Rounds per condition, the schedule's name and the conditions played.
	Rounds     int
	Schedule   string
	Conditions []string
	// Agents are the tournament's agents in the file's order.
	Agents []TournamentAgent
	// Scheduled is the number of games in the schedule; Games the games
	// recorded so far, failed ones included, sorted by id.
	Scheduled int
	Games     []TournamentGame
	// FilesSHA256 is the hash of the game's frozen files ("" for none).
	FilesSHA256 string
}

// TournamentAgent is one agent of a tournament, as its report names it.
type TournamentAgent struct {
	Name, Family string
	OpenWeights  bool
}

// TournamentGame is one recorded game of a tournament.
type TournamentGame struct {
	// ID is the game's id; Condition and Round where it stands in the
	// schedule (Round counts from 1 within the condition).
	ID        string
	Condition string
	Round     int
	// Seats are the agents' names by seat (Tournament.Seats).
	Seats [2]string
	// Failed reports that every attempt failed: Rollout holds the last.
	Failed  bool
	Rollout *dataset.Rollout
}

// File is a named file's contents.
type File struct {
	Name string
	Data []byte
}
