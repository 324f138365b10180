package sim

import (
	"strconv"
	"sync"

	"github.com/parleyhq/parley/internal/jsonfast"
)

// Fast paths for the hot requests: a completion body is mostly its
// token-id prompt, and a completion response mostly token ids and
// logprobs. encoding/json handles those at several hundred nanoseconds per
// number; internal/jsonfast does it at a few.

// extractIntArray finds the top-level field key of a JSON object body and,
// if its value is a flat array of int32 integers, returns them and the body
// with that value replaced by null. ok is false when the body is not valid
// JSON, not an object, the field is absent, or its value is anything else;
// callers then decode the body as usual. With the key repeated, the last
// one is taken, as encoding/json does.
func extractIntArray(body []byte, key string) (ids []int32, rest []byte, ok bool) {
	r := jsonfast.NewReader(body)
	start, end := -1, -1
	err := r.Object(func(k []byte) error {
		if !jsonfast.KeyIs(k, key) {
			return r.Skip()
		}
		r.Peek()
		start = r.Pos()
		ids = make([]int32, 0, len(body)/6+1)
		if err := r.Int32s(func(v int32) { ids = append(ids, v) }); err != nil {
			return err
		}
		end = r.Pos()
		return nil
	})
	if err != nil || r.End() != nil || start < 0 {
		return nil, nil, false
	}
	rest = make([]byte, 0, len(body)-(end-start)+4)
	rest = append(append(append(rest, body[:start]...), "null"...), body[end:]...)
	return ids, rest, true
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// appendCompletion encodes a completion response as vLLM does (same fields,
// same order).
func (s *Server) appendCompletion(dst []byte, r *completionOut) []byte {
	dst = append(dst, `{"id":`...)
	dst = jsonfast.AppendString(dst, r.id)
	dst = append(dst, `,"object":"text_completion","created":`...)
	dst = strconv.AppendInt(dst, r.created, 10)
	dst = append(dst, `,"model":`...)
	dst = jsonfast.AppendString(dst, r.model)
	dst = append(dst, `,"choices":[`...)
	for i := range r.choices {
		c := &r.choices[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"index":`...)
		dst = strconv.AppendInt(dst, int64(c.index), 10)
		dst = append(dst, `,"text":`...)
		dst = jsonfast.AppendString(dst, c.gen.text)
		dst = append(dst, `,"logprobs":`...)
		if lp := c.gen.logprobs; lp == nil {
			dst = append(dst, "null"...)
		} else {
			dst = s.appendLogprobs(dst, lp)
		}
		dst = append(dst, `,"finish_reason":`...)
		dst = jsonfast.AppendString(dst, c.gen.finish)
		dst = append(dst, `,"stop_reason":`...)
		if s, ok := c.gen.stopReason.(string); ok {
			dst = jsonfast.AppendString(dst, s)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"token_ids":`...)
		if r.tokenIDs {
			dst = jsonfast.AppendInt32s(dst, c.gen.tokens)
		} else {
			dst = append(dst, "null"...)
		}
		dst = append(dst, `,"prompt_logprobs":null,"prompt_token_ids":`...)
		dst = jsonfast.AppendInt32s(dst, c.promptIDs)
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
	return jsonfast.AppendString(dst, s.tok.Piece(id))
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
	dst = jsonfast.AppendInt32s(dst, r.Tokens)
	dst = append(dst, `,"token_strs":`...)
	if r.TokenStrs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, s := range r.TokenStrs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendString(dst, s)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}
