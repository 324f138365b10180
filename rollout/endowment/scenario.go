package endowment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Framings: the requester writes about one named person (singular) or
// about a group (group).
const (
	FramingSingular = "singular"
	FramingGroup    = "group"
)

// Framings lists the framings in a fixed order.
var Framings = []string{FramingSingular, FramingGroup}

// MaxEndowment bounds a scenario's endowment.
const MaxEndowment = 1e9

// Scenario is one row of the game (dataset.Prompt.Scenario, as JSON).
type Scenario struct {
	// Endowment is the holder's starting balance in dollars (0: the
	// section's endowment, 100 by default).
	Endowment float64 `json:"endowment,omitempty"`
	// Framing is FramingSingular or FramingGroup.
	Framing string `json:"framing"`
	// Cause names the cause, the same across its framings (for pairing
	// rows in the analysis); optional.
	Cause string `json:"cause,omitempty"`
	// Appeal is who the money is for, written in the row's framing; it is
	// inserted into the requester's prompt.
	Appeal string `json:"appeal"`
}

// ParseScenario decodes a row's scenario and checks it. Errors name the
// key.
func ParseScenario(s string) (Scenario, error) {
	var sc Scenario
	if strings.TrimSpace(s) == "" {
		return sc, errors.New("no scenario: an endowment row needs {\"framing\", \"appeal\"[, \"endowment\", \"cause\"]}")
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sc); err != nil {
		return sc, fmt.Errorf("scenario: %w", err)
	}
	if dec.More() {
		return sc, errors.New("scenario: trailing data after the JSON object")
	}
	if err := sc.Validate(); err != nil {
		return sc, fmt.Errorf("scenario: %w", err)
	}
	return sc, nil
}

// Validate checks a scenario; an endowment of 0 means the default.
func (sc Scenario) Validate() error {
	var errs []error
	if math.IsNaN(sc.Endowment) || sc.Endowment < 0 || sc.Endowment > MaxEndowment {
		errs = append(errs, fmt.Errorf("key endowment: must be positive and at most %g, got %g", float64(MaxEndowment), sc.Endowment))
	}
	if sc.Framing != FramingSingular && sc.Framing != FramingGroup {
		errs = append(errs, fmt.Errorf("key framing: must be %q or %q, got %q", FramingSingular, FramingGroup, sc.Framing))
	}
	if strings.TrimSpace(sc.Appeal) == "" {
		errs = append(errs, errors.New("key appeal: must not be empty"))
	}
	return errors.Join(errs...)
}

// JSON encodes the scenario for dataset.Prompt.Scenario.
func (sc Scenario) JSON() string {
	b, _ := json.Marshal(sc)
	return string(b)
}
