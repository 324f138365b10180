package llm

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

const (
	metricRunning       = "vllm:num_requests_running"
	metricWaiting       = "vllm:num_requests_waiting"
	metricPrefixQueries = "vllm:prefix_cache_queries_total"
	metricPrefixHits    = "vllm:prefix_cache_hits_total"
	// metricSessionHeader is serve-sim's count of completions by whether
	// they carried the session header (sim.MetricSessionHeader); a vLLM
	// server has none.
	metricSessionHeader = "sim_session_header_total"
)

// vllmLoad is the load read from a vLLM /metrics page, and its prefix-cache
// counters (in tokens, since the server started).
type vllmLoad struct {
	Running, Waiting          float64
	PrefixQueries, PrefixHits float64
	NoSessionHeader           float64 // serve-sim's completions without the session header
}

// parseVLLMLoad reads vllm:num_requests_running and vllm:num_requests_waiting
// from Prometheus text exposition, summing over label sets (one per engine
// or model). It fails when neither metric is present.
func parseVLLMLoad(text []byte) (vllmLoad, error) {
	var out vllmLoad
	found := false
	for len(text) > 0 {
		var line []byte
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		name, rest, err := splitSample(line)
		if err != nil {
			return vllmLoad{}, err
		}
		var dst *float64
		switch string(name) {
		case metricRunning:
			dst = &out.Running
		case metricWaiting:
			dst = &out.Waiting
		case metricPrefixQueries:
			dst = &out.PrefixQueries
		case metricPrefixHits:
			dst = &out.PrefixHits
		case metricSessionHeader:
			if !bytes.Contains(line, []byte(`present="false"`)) {
				continue
			}
			dst = &out.NoSessionHeader
		default:
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			return vllmLoad{}, fmt.Errorf("%w: metric %s has no value", ErrBadResponse, name)
		}
		v, err := strconv.ParseFloat(string(fields[0]), 64)
		if err != nil {
			return vllmLoad{}, fmt.Errorf("%w: metric %s: %v", ErrBadResponse, name, err)
		}
		*dst += v
		found = found || dst == &out.Running || dst == &out.Waiting
	}
	if !found {
		return vllmLoad{}, fmt.Errorf("%w: no %s or %s in /metrics (is this a vLLM server?)", ErrBadResponse, metricRunning, metricWaiting)
	}
	return out, nil
}

// splitSample splits a sample line into the metric name and what follows
// its label set (value and optional timestamp).
func splitSample(line []byte) (name, rest []byte, err error) {
	i := 0
	for i < len(line) && line[i] != '{' && line[i] != ' ' && line[i] != '\t' {
		i++
	}
	name = line[:i]
	if i == len(line) || line[i] != '{' {
		return name, line[i:], nil
	}
	inQuote := false
	for j := i + 1; j < len(line); j++ {
		switch c := line[j]; {
		case inQuote && c == '\\':
			j++
		case c == '"':
			inQuote = !inQuote
		case !inQuote && c == '}':
			return name, line[j+1:], nil
		}
	}
	return nil, nil, errors.Join(ErrBadResponse, fmt.Errorf("unterminated label set in %q", clip(string(line))))
}
