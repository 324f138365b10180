package harness

import (
	"fmt"
	"net/url"
	"strings"
)

// SideSpec names the model one side of a comparison samples from. The
// syntax (see ParseSide):
//
//	base                    the config's endpoints and served model
//	adapter:NAME            the config's endpoints, LoRA adapter NAME (already loaded)
//	adapter:NAME=PATH       the same, loading the adapter from PATH (as the server sees it) first
//	http://host:8000        that endpoint, the config's served model
//	http://host:8000#NAME   that endpoint, model or adapter NAME
type SideSpec struct {
	// Endpoints are the base URLs to sample from; nil means the config's.
	Endpoints []string
	// Model is the served model or LoRA adapter name; "" means the config's
	// served model.
	Model string
	// AdapterPath, when set, is loaded under Model before sampling.
	AdapterPath string
	// Spec is the text parsed.
	Spec string
}

// ParseSide parses a side as documented on SideSpec.
func ParseSide(s string) (SideSpec, error) {
	spec := SideSpec{Spec: s}
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return SideSpec{}, fmt.Errorf("harness.ParseSide: empty side (want base, adapter:NAME[=PATH], URL or URL#NAME)")
	case s == "base":
		return spec, nil
	case strings.HasPrefix(s, "adapter:"):
		name, path, hasPath := strings.Cut(strings.TrimPrefix(s, "adapter:"), "=")
		name = strings.TrimSpace(name)
		if name == "" {
			return SideSpec{}, fmt.Errorf("harness.ParseSide(%q): no adapter name after \"adapter:\"", s)
		}
		if hasPath && strings.TrimSpace(path) == "" {
			return SideSpec{}, fmt.Errorf("harness.ParseSide(%q): empty adapter path after =", s)
		}
		spec.Model, spec.AdapterPath = name, strings.TrimSpace(path)
		return spec, nil
	case strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://"):
		base, name, _ := strings.Cut(s, "#")
		u, err := url.Parse(base)
		if err != nil || u.Host == "" {
			return SideSpec{}, fmt.Errorf("harness.ParseSide(%q): not an http(s) base URL", redact(base))
		}
		if u.RawQuery != "" {
			return SideSpec{}, fmt.Errorf("harness.ParseSide(%q): a base URL takes no query", redact(base))
		}
		spec.Endpoints = []string{base}
		spec.Model = strings.TrimSpace(name)
		return spec, nil
	}
	return SideSpec{}, fmt.Errorf("harness.ParseSide(%q): want base, adapter:NAME[=PATH], http(s)://host:port or http(s)://host:port#NAME", s)
}

// Label is the side's default name in results: the adapter or model name
// when one is given, else "base" for the config's endpoints, else the
// endpoint URL (password redacted).
func (s SideSpec) Label() string {
	switch {
	case s.Model != "":
		return s.Model
	case len(s.Endpoints) == 0:
		return "base"
	}
	return redact(s.Endpoints[0])
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return u.Redacted()
}
