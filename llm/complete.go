package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley/internal/jsonfast"
)

const pathCompletions = "/v1/completions"

// Complete samples completions of a token-id prompt (POST /v1/completions)
// and returns one Completion per choice, in choice order. The request
// always carries max_tokens and temperature (zero included), logprobs: 1,
// return_token_ids, return_tokens_as_token_ids and skip_special_tokens:
// false. The response must carry token_ids (ErrNoTokenIDs otherwise) and
// one logprob per token; an echoed prompt_token_ids must equal the prompt.
func (c *Client) Complete(ctx context.Context, req CompletionRequest) ([]Completion, error) {
	if err := validateCompletion(&req); err != nil {
		return nil, fmt.Errorf("llm.Complete: %w", err)
	}
	buf := getBody(completionBodySize(&req))
	body, sent := appendCompletionBody(buf.b, &req)
	buf.b = body
	want := max(req.N, 1)
	var out []Completion
	err := c.do(ctx, &call{
		method:   http.MethodPost,
		path:     pathCompletions,
		body:     body,
		pooled:   buf,
		slot:     true,
		session:  true,
		classify: modelNotServed,
		handle: func(b []byte) error {
			var err error
			out, err = decodeCompletion(b, want, sent)
			return err
		},
	})
	if err != nil {
		return nil, fmt.Errorf("llm.Complete: %w", err)
	}
	return out, nil
}

// validateCompletion rejects requests vLLM would refuse or misread.
func validateCompletion(req *CompletionRequest) error {
	switch {
	case len(req.Prompt) == 0:
		return errors.New("empty prompt")
	case req.MaxTokens <= 0:
		return fmt.Errorf("MaxTokens = %d, want > 0 (vLLM's default of 16 is never relied on)", req.MaxTokens)
	case req.N < 0:
		//lint:ignore ST1005 the message starts with the field it is about, CompletionRequest.N
		return fmt.Errorf("N = %d, want >= 0", req.N)
	case !finite(req.Temperature) || req.Temperature < 0:
		//lint:ignore ST1005 the message starts with the field it is about, CompletionRequest.Temperature
		return fmt.Errorf("Temperature = %v, want a finite value >= 0", req.Temperature)
	case !finite(req.TopP) || req.TopP < 0 || req.TopP > 1:
		return fmt.Errorf("TopP = %v, want 0 (unset) or in (0, 1]", req.TopP)
	case !finite(req.MinP) || req.MinP < 0 || req.MinP > 1:
		return fmt.Errorf("MinP = %v, want in [0, 1]", req.MinP)
	}
	for i, t := range req.Prompt {
		if t < 0 {
			return fmt.Errorf("prompt token %d is %d, want >= 0", i, t)
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// completionBodySize estimates the encoded size of req.
func completionBodySize(req *CompletionRequest) int {
	n := 256 + len(req.Model) + 7*len(req.Prompt)
	for _, s := range req.Stop {
		n += len(s) + 4
	}
	return n
}

// sentPrompt is what a response's prompt_token_ids is checked against: the
// prompt's digest and its encoding as sent (a slice of the request body).
type sentPrompt struct {
	raw    []byte
	digest tokenDigest
}

// appendCompletionBody appends the JSON body of req to b and returns it
// with the prompt as sent.
func appendCompletionBody(b []byte, req *CompletionRequest) ([]byte, sentPrompt) {
	b = append(b, '{')
	if req.Model != "" {
		b = append(b, `"model":`...)
		b = jsonfast.AppendString(b, req.Model)
		b = append(b, ',')
	}
	b = append(b, `"prompt":`...)
	start := len(b)
	b = append(b, '[')
	var d tokenDigest
	for i, t := range req.Prompt {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonfast.AppendInt32(b, t)
		d.add(int64(t))
	}
	b = append(b, ']')
	end := len(b)
	b = append(b, `,"max_tokens":`...)
	b = strconv.AppendInt(b, int64(req.MaxTokens), 10)
	b = append(b, `,"temperature":`...)
	b = strconv.AppendFloat(b, req.Temperature, 'g', -1, 64)
	if req.TopP != 0 {
		b = append(b, `,"top_p":`...)
		b = strconv.AppendFloat(b, req.TopP, 'g', -1, 64)
	}
	if req.TopK != 0 {
		b = append(b, `,"top_k":`...)
		b = strconv.AppendInt(b, int64(req.TopK), 10)
	}
	if req.MinP != 0 {
		b = append(b, `,"min_p":`...)
		b = strconv.AppendFloat(b, req.MinP, 'g', -1, 64)
	}
	if req.N != 0 {
		b = append(b, `,"n":`...)
		b = strconv.AppendInt(b, int64(req.N), 10)
	}
	if req.Seed != nil {
		b = append(b, `,"seed":`...)
		b = strconv.AppendInt(b, *req.Seed, 10)
	}
	if len(req.Stop) > 0 {
		b = append(b, `,"stop":[`...)
		for i, s := range req.Stop {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonfast.AppendString(b, s)
		}
		b = append(b, ']')
	}
	b = append(b, `,"logprobs":1,"return_token_ids":true,"return_tokens_as_token_ids":true,"skip_special_tokens":false}`...)
	return b, sentPrompt{raw: b[start:end:end], digest: d}
}

// choiceState is one decoded choice before checks.
type choiceState struct {
	index        int
	text, finish string
	ids          []int32
	hasIDs       bool
	lps          []float32
	hasLogprobs  bool // logprobs.token_logprobs present and not null
	echo         tokenDigest
	hasEcho      bool
}

// decodeCompletion decodes and checks a completion response holding want
// choices for the prompt sent. It reads only index, text, finish_reason,
// token_ids, prompt_token_ids and logprobs.token_logprobs, skipping the
// rest (see jsonfast.Reader).
func decodeCompletion(body []byte, want int, sent sentPrompt) ([]Completion, error) {
	prompt := sent.digest
	chs, err := parseChoices(body, want, sent)
	if err != nil {
		return nil, fmt.Errorf("%w: decoding the completion: %v", ErrBadResponse, err)
	}
	if len(chs) != want {
		return nil, fmt.Errorf("%w: %d choices, want %d", ErrBadResponse, len(chs), want)
	}
	out := make([]Completion, want)
	filled := make([]bool, want)
	for k := range chs {
		ch := &chs[k]
		i := ch.index
		if i < 0 || i >= want || filled[i] {
			return nil, fmt.Errorf("%w: choice index %d out of range or repeated", ErrBadResponse, ch.index)
		}
		filled[i] = true
		if !ch.hasIDs {
			return nil, fmt.Errorf("choice %d: %w", i, ErrNoTokenIDs)
		}
		if !ch.hasLogprobs {
			return nil, fmt.Errorf("%w: choice %d has no logprobs.token_logprobs (the server ignored logprobs: 1)", ErrBadResponse, i)
		}
		if len(ch.lps) != len(ch.ids) {
			return nil, fmt.Errorf("%w: choice %d has %d logprobs for %d token ids", ErrBadResponse, i, len(ch.lps), len(ch.ids))
		}
		if ch.hasEcho && ch.echo != prompt {
			return nil, fmt.Errorf("%w: choice %d: the server's prompt_token_ids (%d tokens) differ from the prompt sent (%d tokens)",
				ErrBadResponse, i, ch.echo.n, prompt.n)
		}
		out[i] = Completion{TokenIDs: ch.ids, Logprobs: ch.lps, Text: ch.text, FinishReason: ch.finish}
	}
	return out, nil
}

// parseChoices reads the choices of a completion response. An echoed
// prompt_token_ids byte-identical to sent.raw (the prompt as encoded in the
// request) is taken without parsing it.
func parseChoices(body []byte, want int, sent sentPrompt) ([]choiceState, error) {
	r := jsonfast.NewReader(body)
	var chs []choiceState
	err := r.Object(func(key []byte) error {
		if !jsonfast.KeyIs(key, "choices") {
			return r.Skip()
		}
		chs = make([]choiceState, 0, want)
		if isNull, err := r.Null(); isNull || err != nil {
			return err
		}
		return r.Array(func(int) error {
			chs = append(chs, choiceState{})
			return parseChoice(r, &chs[len(chs)-1], sent)
		})
	})
	if err != nil {
		return nil, err
	}
	return chs, r.End()
}

// parseChoice reads one choice object.
func parseChoice(r *jsonfast.Reader, ch *choiceState, sent sentPrompt) error {
	return r.Object(func(key []byte) error {
		var err error
		switch {
		case jsonfast.KeyIs(key, "index"):
			var v int64
			if isNull, nerr := r.Null(); isNull || nerr != nil {
				return nerr
			}
			v, err = r.Int()
			ch.index = int(v)
		case jsonfast.KeyIs(key, "text"):
			ch.text, err = r.StrOrNull()
		case jsonfast.KeyIs(key, "finish_reason"):
			ch.finish, err = r.StrOrNull()
		case jsonfast.KeyIs(key, "token_ids"):
			ch.ids, ch.hasIDs, err = readTokenIDs(r)
		case jsonfast.KeyIs(key, "prompt_token_ids"):
			if len(sent.raw) > 0 && r.Peek() == '[' && bytes.HasPrefix(r.Rest(), sent.raw) {
				r.Advance(len(sent.raw)) // the prompt as sent, byte for byte
				ch.echo, ch.hasEcho = sent.digest, true
				return nil
			}
			ch.echo, ch.hasEcho, err = readDigest(r)
		case jsonfast.KeyIs(key, "logprobs"):
			ch.lps, ch.hasLogprobs, err = readLogprobs(r)
		default:
			err = r.Skip()
		}
		return err
	})
}

// readTokenIDs reads null or an array of token ids.
func readTokenIDs(r *jsonfast.Reader) ([]int32, bool, error) {
	if isNull, err := r.Null(); isNull || err != nil {
		return nil, false, err
	}
	ids := make([]int32, 0, arrayLenHint(r.Rest()))
	err := r.Uint31s(func(v int32) { ids = append(ids, v) })
	return ids, true, err
}

// readDigest reads null or an array of token ids into a digest.
func readDigest(r *jsonfast.Reader) (tokenDigest, bool, error) {
	var d tokenDigest
	if isNull, err := r.Null(); isNull || err != nil {
		return d, false, err
	}
	err := r.Uint31s(func(v int32) { d.add(int64(v)) })
	return d, true, err
}

// readLogprobs reads a choice's logprobs object for token_logprobs.
func readLogprobs(r *jsonfast.Reader) ([]float32, bool, error) {
	if isNull, err := r.Null(); isNull || err != nil {
		return nil, false, err
	}
	var lps []float32
	has := false
	err := r.Object(func(key []byte) error {
		if !jsonfast.KeyIs(key, "token_logprobs") {
			return r.Skip()
		}
		if isNull, err := r.Null(); isNull || err != nil {
			lps, has = nil, false
			return err
		}
		has = true
		lps = make([]float32, 0, arrayLenHint(r.Rest()))
		return r.Array(func(k int) error {
			if isNull, err := r.Null(); isNull || err != nil {
				if err == nil {
					err = fmt.Errorf("token_logprobs[%d] is null", k)
				}
				return err
			}
			v, err := r.Float32()
			lps = append(lps, v)
			return err
		})
	})
	return lps, has, err
}

// arrayLenHint estimates the length of the flat number array at the start
// of b by counting commas up to the first ']'.
func arrayLenHint(b []byte) int {
	if end := bytes.IndexByte(b, ']'); end >= 0 {
		b = b[:end]
	}
	return bytes.Count(b, comma) + 1
}

var comma = []byte{','}
