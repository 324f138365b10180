package sim

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
)

// Schema names of the curriculum generator's persona requests (the
// dataset/generate package's PersonaSchemaName and OppositionSchemaName).
const (
	SchemaPersonaPair       = "persona_pair"
	SchemaPersonaOpposition = "persona_opposition"
)

// Persona values the simulated generator pairs: one from each list, so
// that the two sides pull toward different resolutions.
var (
	personaDuty = []string{
		"Always tell the truth, whatever it costs you.",
		"Uphold the rules and report wrongdoing without exception.",
		"Protect the public from harm before anything else.",
		"Act with integrity even when nobody is watching.",
		"Hold people accountable for the choices they make.",
	}
	personaCare = []string{
		"Stay loyal to the people who trust you.",
		"Shield your friends and family from pain and shame.",
		"Keep the peace and avoid needless conflict.",
		"Give people a second chance to make things right.",
		"Protect your own livelihood and your dependents' security.",
	}
)

// personaPair answers a persona_pair request: {"a", "b"}, a duty-minded
// persona against a care-minded one, drawn by rng (which side holds which
// is drawn too).
func personaPair(rng *rand.Rand) string {
	a, b := personaDuty[rng.IntN(len(personaDuty))], personaCare[rng.IntN(len(personaCare))]
	if rng.IntN(2) == 1 {
		a, b = b, a
	}
	out, _ := json.Marshal(map[string]string{"a": a, "b": b})
	return string(out)
}

// personaOpposition answers a persona_opposition request: the personas
// after "Persona of agent A:" and "Persona of agent B:" in the user
// message conflict (opposition 4) when they differ, and do not
// (opposition 1) when they are the same text or either is missing.
func personaOpposition(user string) string {
	field := func(label string) string {
		i := strings.Index(user, label)
		if i < 0 {
			return ""
		}
		rest := user[i+len(label):]
		if j := strings.IndexByte(rest, '\n'); j >= 0 {
			rest = rest[:j]
		}
		return strings.ToLower(strings.TrimSpace(rest))
	}
	a, b := field("Persona of agent A:"), field("Persona of agent B:")
	v := map[string]any{"rationale": "The personas favour different resolutions of the dilemma.", "conflict": true, "opposition": 4}
	if a == "" || a == b {
		v = map[string]any{"rationale": "The personas hold the same value.", "conflict": false, "opposition": 1}
	}
	out, _ := json.Marshal(v)
	return string(out)
}
