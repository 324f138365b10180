// Package tournament plays round robins among agents (`parley
// tournament`, seed 001's tournament): every pair of agents meets with
// each agent in each of a game's two seats, under each of the game's
// conditions, for a number of rounds. It schedules the games, plays them
// concurrently with retries, records each finished game atomically so that
// a run killed at any point resumes where it stopped, freezes what the
// games depend on, and hands the records to the game's own analysis for the
// report (rollout.Tournament). It builds nothing from config: the players,
// the game and its scorer are given.
package tournament

import (
	"encoding/json"
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/eval/tournament/schedule"
)

// Schedules, named in package schedule so that config validates them
// without importing tournament.
const (
	ScheduleAlternate = schedule.Alternate // one game per pair, seats alternating (the default)
	ScheduleBoth      = schedule.Both      // both seat assignments every round
)

// Schedules lists the schedules, the default first (schedule.Names).
var Schedules = schedule.Names

// Match is one scheduled game.
type Match struct {
	// ID names the game and its record file: f<condition index>-r<round>-
	// <seat 0 agent index>-<seat 1 agent index>, indices zero-padded.
	ID string `json:"id"`
	// Condition is the game's condition (seed 001: the requester's
	// framing); Round counts from 1 within it.
	Condition string `json:"condition"`
	Round     int    `json:"round"`
	// Seats are the agents' names by seat (rollout.Tournament.Seats).
	Seats [2]string `json:"seats"`
	// Scenario is the prompt row played (its id), Prompt the row itself.
	Scenario string         `json:"scenario"`
	Prompt   dataset.Prompt `json:"-"`
}

// UnmarshalJSON reads a match, and the records of parley versions whose
// tournaments were seed 001's alone: their "framing" is the condition and
// "holder" and "requester" the agents of seats 0 and 1.
func (m *Match) UnmarshalJSON(b []byte) error {
	type plain Match
	var v struct {
		plain
		Framing   *string `json:"framing"`
		Holder    *string `json:"holder"`
		Requester *string `json:"requester"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Match(v.plain)
	if v.Framing != nil {
		m.Condition = *v.Framing
	}
	if v.Holder != nil {
		m.Seats[0] = *v.Holder
	}
	if v.Requester != nil {
		m.Seats[1] = *v.Requester
	}
	return nil
}

// Plan is what a schedule is made from.
type Plan struct {
	// Agents are the agents' names, in order.
	Agents []string
	// Rounds per condition, and the schedule (ScheduleAlternate or
	// ScheduleBoth).
	Rounds   int
	Schedule string
	// Conditions are played in this order; Condition returns a row's (nil:
	// the game has none, and Conditions is [""]).
	Conditions []string
	Condition  func(dataset.Prompt) (string, error)
}

// Schedule lists a tournament's games in a fixed order: conditions in the
// plan's order, then rounds, then unordered pairs (i < j, by agent order),
// then (ScheduleBoth) the two seat assignments. Under ScheduleAlternate
// agent i takes seat 0 against j when round + condition index + i + j is
// even: seats alternate by round and are swapped between the conditions,
// so over two conditions each ordered pairing plays `rounds` games. Each
// condition cycles through its own rows, one per game.
func Schedule(p Plan, rows []dataset.Prompt) ([]Match, error) {
	byCondition := map[string][]dataset.Prompt{}
	for _, r := range rows {
		c := ""
		if p.Condition != nil {
			var err error
			if c, err = p.Condition(r); err != nil {
				return nil, fmt.Errorf("tournament.Schedule: scenario %s: %w", r.ID, err)
			}
		}
		byCondition[c] = append(byCondition[c], r)
	}
	n := len(p.Agents)
	width := len(fmt.Sprint(n - 1))
	var out []Match
	for ci, c := range p.Conditions {
		cond := byCondition[c]
		if len(cond) == 0 {
			return nil, fmt.Errorf("tournament.Schedule: the scenarios hold no row with condition %q", c)
		}
		k := 0
		add := func(round, a, b int) {
			row := cond[k%len(cond)]
			k++
			out = append(out, Match{
				ID:        fmt.Sprintf("f%d-r%02d-%0*d-%0*d", ci, round, width, a, width, b),
				Condition: c, Round: round, Seats: [2]string{p.Agents[a], p.Agents[b]},
				Scenario: row.ID, Prompt: row,
			})
		}
		for round := 1; round <= p.Rounds; round++ {
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					switch {
					case p.Schedule == ScheduleBoth:
						add(round, i, j)
						add(round, j, i)
					case (round+ci+i+j)%2 == 0:
						add(round, i, j)
					default:
						add(round, j, i)
					}
				}
			}
		}
	}
	return out, nil
}
