package sim

import (
	"strconv"
	"sync"

	"github.com/parleyhq/parley/internal/jsonenc"
)

// Fast paths for the hot requests: a completion body is mostly its
// token-id prompt, and a completion response mostly token ids and
// logprobs. encoding/json handles those at several hundred nanoseconds per
// number; these helpers do it at a few.

// extractIntArray finds the top-level field key of a JSON object body and,
// if its value is a flat array of integers, returns them and the body with
// that value replaced by null. ok is false when the body is not a JSON
// object, the field is absent, or its value is anything else; callers then
// decode the body as usual.
func extractIntArray(body []byte, key string) (ids []int32, rest []byte, ok bool) {
	i := skipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, nil, false
	}
	i++
	for {
		i = skipWS(body, i)
		if i >= len(body) || body[i] != '"' {
			return nil, nil, false
		}
		ks := i + 1
		ke := endOfString(body, i)
		if ke < 0 {
			return nil, nil, false
		}
		k := body[ks : ke-1]
		i = skipWS(body, ke)
		if i >= len(body) || body[i] != ':' {
			return nil, nil, false
		}
		vs := skipWS(body, i+1)
		ve := skipValue(body, vs)
		if ve < 0 {
			return nil, nil, false
		}
		if string(k) == key {
			ids, ok := parseIntArray(body[vs:ve])
			if !ok {
				return nil, nil, false
			}
			rest = make([]byte, 0, len(body)-(ve-vs)+4)
			rest = append(append(append(rest, body[:vs]...), "null"...), body[ve:]...)
			return ids, rest, true
		}
		i = skipWS(body, ve)
		if i >= len(body) || body[i] != ',' {
			return nil, nil, false
		}
		i++
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// endOfString returns the offset after the string starting at b[i] == '"',
// or -1.
func endOfString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the offset after the JSON value starting at b[i], or
// -1. It does not validate scalars; encoding/json does later.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return endOfString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				e := endOfString(b, j)
				if e < 0 {
					return -1
				}
				j = e - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	default:
		j := i
		for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
			j++
		}
		return j
	}
}

// parseIntArray parses a flat JSON array of int32 values.
func parseIntArray(b []byte) ([]int32, bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	out := make([]int32, 0, len(b)/6+1)
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, skipWS(b, i+1) == len(b)
	}
	for {
		neg := false
		if i < len(b) && b[i] == '-' {
			neg = true
			i++
		}
		start := i
		var v int64
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			v = v*10 + int64(b[i]-'0')
			if v > 1<<31 {
				return nil, false
			}
			i++
		}
		if i == start || (i-start > 1 && b[start] == '0') {
			return nil, false
		}
		if neg {
			v = -v
		}
		if v > 1<<31-1 || v < -(1<<31) {
			return nil, false
		}
		out = append(out, int32(v))
		i = skipWS(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case ']':
			return out, skipWS(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

func appendInt32s(dst []byte, ids []int32) []byte {
	if ids == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(id), 10)
	}
	return append(dst, ']')
}

// appendFloat appends a logprob, which the simulator keeps at float32
// precision (so clients decoding into float32 lose nothing).
func appendFloat(dst []byte, v float64) []byte {
	return strconv.AppendFloat(dst, v, 'g', -1, 32)
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// appendCompletion encodes a completion response as vLLM does (same fields,
// same order).
func (s *Server) appendCompletion(dst []byte, r *completionOut) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonenc.AppendString(dst, r.id)
	dst = append(dst, `,"object":"text_completion","created":`...)
	dst = strconv.AppendInt(dst, r.created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonenc.AppendString(dst, r.model)
	dst = append(dst, `,"choices":[`...)
	for i := range r.choices {
		c := &r.choices[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(c.index), 10)
		dst = append(dst, `,"text":`...)
		dst = jsonenc.AppendString(dst, c.gen.text)
		dst = append(dst, `,"logprobs":`...)
		if lp := c.gen.logprobs; lp == nil {
			dst = append(dst, "null"...)
		} else {
			dst = s.appendLogprobs(dst, lp)
		}
		dst = append(dst, `,"finish_reason":`...)
		dst = jsonenc.AppendString(dst, c.gen.finish)
		dst = append(dst, `,"stop_reason":`...)
		if s, ok := c.gen.stopReason.(string); ok {
			dst = jsonenc.AppendString(dst, s)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"token_ids":`...)
		if r.tokenIDs {
			dst = appendInt32s(dst, c.gen.tokens)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"prompt_logprobs":null,"prompt_token_ids":`...)
		dst = appendInt32s(dst, c.promptIDs)
		dst = append(dst, '}')
	}
	dst = append(dst, `],"service_tier":null,"system_fingerprint":null,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.usage.PromptTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.usage.TotalTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(r.usage.CompletionTokens), 10)
	dst = append(dst, `,"prompt_tokens_details":null},"kv_transfer_params":null}`...)
	return dst
}

// appendTokenName appends a token's name in logprobs: its text, or
// "token_id:N" with return_tokens_as_token_ids.
func (s *Server) appendTokenName(dst []byte, id int32, asIDs bool) []byte {
	if asIDs {
		dst = append(dst, `"token_id:`...)
		dst = strconv.AppendInt(dst, int64(id), 10)
		return append(dst, '"')
	}
	return jsonenc.AppendString(dst, s.tok.Piece(id))
}

func (s *Server) appendLogprobs(dst []byte, lp *genLogprobs) []byte {
	dst = append(dst, `{"text_offset":[`...)
	for k, o := range lp.offsets {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendInt(dst, int64(o), 10)
	}
	dst = append(dst, `],"token_logprobs":[`...)
	for k, v := range lp.lp {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, lpText[v]...)
	}
	dst = append(dst, `],"tokens":[`...)
	for k, id := range lp.ids {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = s.appendTokenName(dst, id, lp.asIDs)
	}
	dst = append(dst, `],"top_logprobs":[`...)
	for k, id := range lp.ids {
		if k > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, '{')
		dst = s.appendTokenName(dst, id, lp.asIDs)
		dst = append(dst, ':')
		dst = append(dst, lpText[lp.lp[k]]...)
		for _, a := range lp.alts[k*lp.k : (k+1)*lp.k] {
			dst = append(dst, ',')
			dst = s.appendTokenName(dst, a.id, lp.asIDs)
			dst = append(dst, ':')
			dst = append(dst, lpText[a.lp]...)
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

// appendTokenize encodes a /tokenize response.
func appendTokenize(dst []byte, r *tokenizeResponse) []byte {
	dst = append(dst, `{"count":`...)
	dst = strconv.AppendInt(dst, int64(r.Count), 10)
	dst = append(dst, `,"max_model_len":`...)
	dst = strconv.AppendInt(dst, int64(r.MaxModelLen), 10)
	dst = append(dst, `,"tokens":`...)
	dst = appendInt32s(dst, r.Tokens)
	dst = append(dst, `,"token_strs":`...)
	if r.TokenStrs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, s := range r.TokenStrs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonenc.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
