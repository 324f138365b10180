package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/parleyhq/parley/internal/jsonfast"
)

const (
	pathTokenize = "/tokenize"
	pathModels   = "/v1/models"
)

// parseTokenize reads vLLM's TokenizeResponse {count, max_model_len,
// tokens}.
func parseTokenize(body []byte) (TokenizeResult, error) {
	r := jsonfast.NewReader(body)
	var out TokenizeResult
	count := -1
	hasTokens := false
	err := r.Object(func(key []byte) error {
		var err error
		switch {
		case jsonfast.KeyIs(key, "tokens"):
			out.Tokens, hasTokens, err = readTokenIDs(r)
		case jsonfast.KeyIs(key, "count"), jsonfast.KeyIs(key, "max_model_len"):
			if isNull, nerr := r.Null(); isNull || nerr != nil {
				return nerr
			}
			var v int64
			v, err = r.Int()
			if jsonfast.KeyIs(key, "count") {
				count = int(v)
			} else {
				out.MaxModelLen = int(v)
			}
		default:
			err = r.Skip()
		}
		return err
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		return TokenizeResult{}, fmt.Errorf("%w: decoding the tokenization: %v", ErrBadResponse, err)
	}
	if !hasTokens {
		return TokenizeResult{}, fmt.Errorf("%w: no tokens in the /tokenize response", ErrBadResponse)
	}
	if count >= 0 && count != len(out.Tokens) {
		return TokenizeResult{}, fmt.Errorf("%w: /tokenize count %d but %d tokens", ErrBadResponse, count, len(out.Tokens))
	}
	out.Count = len(out.Tokens)
	return out, nil
}

// Tokenize renders req.Messages with the server's chat template and returns
// the token ids (POST /tokenize, messages form). The server is parley's
// tokenizer authority.
func (c *Client) Tokenize(ctx context.Context, req TokenizeRequest) (TokenizeResult, error) {
	if len(req.Messages) == 0 {
		return TokenizeResult{}, errors.New("llm.Tokenize: no messages")
	}
	buf := getBody(tokenizeBodySize(&req))
	body, err := appendTokenizeBody(buf.b, &req)
	if err != nil {
		bodyPool.Put(buf)
		return TokenizeResult{}, fmt.Errorf("llm.Tokenize: encoding the request: %w", err)
	}
	buf.b = body
	var out TokenizeResult
	err = c.do(ctx, &call{
		method:   http.MethodPost,
		path:     pathTokenize,
		body:     body,
		pooled:   buf,
		slot:     true,
		classify: modelNotServed,
		handle: func(b []byte) error {
			var err error
			out, err = parseTokenize(b)
			return err
		},
	})
	if err != nil {
		return TokenizeResult{}, fmt.Errorf("llm.Tokenize: %w", err)
	}
	return out, nil
}

// tokenizeBodySize estimates the encoded size of req.
func tokenizeBodySize(req *TokenizeRequest) int {
	n := 128 + len(req.Model)
	for _, m := range req.Messages {
		n += 48 + len(m.Role) + len(m.Content) + len(m.Content)/16
		if m.Reasoning != nil {
			n += 48 + 2*len(*m.Reasoning)
		}
	}
	return n
}

// appendTokenizeBody appends the JSON body of req to b: what
// json.Marshal(req) writes (Message.MarshalJSON for each message), with
// the strings escaped by jsonfast.AppendString (no HTML escaping) instead
// of reflection and a re-validation of each message. Only the chat
// template kwargs, a small map, go through encoding/json.
func appendTokenizeBody(b []byte, req *TokenizeRequest) ([]byte, error) {
	b = append(b, '{')
	if req.Model != "" {
		b = append(b, `"model":`...)
		b = jsonfast.AppendString(b, req.Model)
		b = append(b, ',')
	}
	b = append(b, `"messages":`...)
	if req.Messages == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range req.Messages {
			m := &req.Messages[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"role":`...)
			b = jsonfast.AppendString(b, m.Role)
			b = append(b, `,"content":`...)
			b = jsonfast.AppendString(b, m.Content)
			if m.Reasoning != nil {
				b = append(b, `,"reasoning":`...)
				b = jsonfast.AppendString(b, *m.Reasoning)
				b = append(b, `,"reasoning_content":`...)
				b = jsonfast.AppendString(b, *m.Reasoning)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"add_generation_prompt":`...)
	b = strconv.AppendBool(b, req.AddGenerationPrompt)
	if len(req.ChatTemplateKwargs) > 0 {
		kw, err := json.Marshal(req.ChatTemplateKwargs)
		if err != nil {
			return nil, fmt.Errorf("chat_template_kwargs: %w", err)
		}
		b = append(b, `,"chat_template_kwargs":`...)
		b = append(b, kw...)
	}
	return append(b, '}'), nil
}

// modelList is the OpenAI model list.
type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
}

// Models returns the ids of the models one endpoint serves (GET
// /v1/models): the base model and any loaded LoRA adapters.
func (c *Client) Models(ctx context.Context) ([]string, error) {
	var ids []string
	err := c.do(ctx, &call{
		method: http.MethodGet,
		path:   pathModels,
		handle: func(b []byte) error {
			var r modelList
			if err := json.Unmarshal(b, &r); err != nil {
				return fmt.Errorf("%w: decoding the model list: %v", ErrBadResponse, err)
			}
			ids = make([]string, len(r.Data))
			for i, m := range r.Data {
				ids[i] = m.ID
			}
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("llm.Models: %w", err)
	}
	return ids, nil
}
