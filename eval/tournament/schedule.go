package tournament

import (
	"fmt"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/endowment"
)

// Match is one scheduled game.
type Match struct {
	// ID names the game and its record file: f<framing>-r<round>-<holder
	// index>-<requester index>, indices zero-padded.
	ID string `json:"id"`
	// Framing is the requester's framing; Round counts from 1 within it.
	Framing string `json:"framing"`
	Round   int    `json:"round"`
	// Holder and Requester are agent names.
	Holder    string `json:"holder"`
	Requester string `json:"requester"`
	// Scenario is the prompt row played (its id), Prompt the row itself.
	Scenario string         `json:"scenario"`
	Prompt   dataset.Prompt `json:"-"`
}

// Schedule lists a tournament's games in a fixed order: framings in the
// spec's order, then rounds, then unordered pairs (i < j, by agent
// order), then (ScheduleBoth) the two role assignments. Under
// ScheduleAlternate agent i holds against j when round + framing index +
// i + j is even: roles alternate by round and are swapped between the
// framings, so over two framings each ordered pairing plays `rounds`
// games. Each framing cycles through its own scenario rows, one per game.
func Schedule(s Spec, scenarios []dataset.Prompt) ([]Match, error) {
	byFraming := map[string][]dataset.Prompt{}
	for _, p := range scenarios {
		sc, err := endowment.ParseScenario(p.Scenario)
		if err != nil {
			return nil, fmt.Errorf("tournament.Schedule: scenario %s: %w", p.ID, err)
		}
		byFraming[sc.Framing] = append(byFraming[sc.Framing], p)
	}
	n := len(s.Agents)
	width := len(fmt.Sprint(n - 1))
	var out []Match
	for fi, f := range s.Framings {
		rows := byFraming[f]
		if len(rows) == 0 {
			return nil, fmt.Errorf("tournament.Schedule: the scenarios hold no row with framing %q", f)
		}
		k := 0
		add := func(round, h, r int) {
			p := rows[k%len(rows)]
			k++
			out = append(out, Match{
				ID:      fmt.Sprintf("f%d-r%02d-%0*d-%0*d", fi, round, width, h, width, r),
				Framing: f, Round: round, Holder: s.Agents[h].Name, Requester: s.Agents[r].Name,
				Scenario: p.ID, Prompt: p,
			})
		}
		for round := 1; round <= s.Rounds; round++ {
			for i := 0; i < n; i++ {
				for j := i + 1; j < n; j++ {
					switch {
					case s.Schedule == ScheduleBoth:
						add(round, i, j)
						add(round, j, i)
					case (round+fi+i+j)%2 == 0:
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
