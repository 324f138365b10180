// Package sim is a simulated vLLM server for tests, dry runs and throughput
// benchmarks (parley serve-sim). It speaks the subset of vLLM's
// OpenAI-compatible API that parley uses, in vLLM >= 0.10.2 shapes:
//
//	GET  /health, /version, /metrics (vllm:num_requests_running/waiting{engine,model_name}), /v1/models
//	POST /tokenize      {model, messages | prompt, add_generation_prompt, chat_template_kwargs, ...}
//	                    -> {count, max_model_len, tokens, token_strs}
//	POST /detokenize    {model, tokens} -> {prompt}
//	POST /v1/completions with a token-id (or text) prompt, max_tokens (default 16), temperature,
//	                    top_p, top_k, min_p, n, seed, stop, logprobs, return_token_ids,
//	                    return_tokens_as_token_ids, skip_special_tokens
//	POST /v1/chat/completions  the simulated judge, curriculum generator and agents
//	POST /v1/load_lora_adapter {lora_name, lora_path}, /v1/unload_lora_adapter {lora_name}
//
// Errors use vLLM's {"error": {message, type, param, code}} shape, or the
// older flat {"object": "error", ...} one with Options.LegacyErrors.
//
// The tokenizer (NewTokenizer) is deterministic and reversible, with Qwen's
// special token ids (<think> and </think> are single tokens too). The
// default ChatML template (RenderChat) re-renders a conversation as an
// exact extension of its earlier prompts; Options.Template TemplateQwen3
// renders exactly as Qwen3's template does (enable_thinking, the empty
// think block at the generation prompt, reasoning stripped from assistant
// turns before the last user query, reasoning_content), so re-rendering
// breaks the prefix, and its agents open each reply with a <think> block
// when thinking is enabled. Options.EngineDiesAfter reproduces vLLM's dead
// engine (500 "EngineCore encountered an issue" on every completion,
// /health 503).
//
// Completions come from persona-driven scripted agents (package
// sim/scripted, the simulated model's voice). The agent parses the ChatML
// messages of its prompt: system messages are its persona and task (their
// words recur in its replies), user messages are the other side,
// assistant messages its own earlier turns. A reply is a few sentences,
// 20 to 80 tokens, ending in <|im_end|> (finish_reason "stop") unless cut
// at max_tokens ("length"); a loaded LoRA adapter's replies carry more
// Collective-Agency vocabulary. When the last user message contains
// "final" and "solution" (any case), the agent writes a final solution
// paragraph instead. Outputs depend only on the prompt token ids, seed
// (choice i uses seed+i; greedy sampling ignores it; no seed means a
// random draw), sampling parameters and model name: never on request
// order, concurrency or injected faults.
//
// A game answers its own prompts through an Answerer in Options.Games
// (serve-sim gives every registered game's, rollout.Spec.Sim): seed 000's
// deliberation agents speak in the scripted agents' voice and add the
// game's agreement protocol (a Speaker, given the model with the served
// tokenizer and Options.AgreeProb or AdapterAgreeProb); seed 001's holders
// and requesters and seed 002's scripted parties answer a prompt of their
// game instead of a persona agent, and a game's judge (seed 001's ledger
// judge) answers its questions before the built-in judge. sim itself
// imports no game, and knows no game's protocol: without Options.Games
// its agents never mark agreement.
//
// The judge on /v1/chat/completions picks its reply by
// response_format.json_schema.name: "collective_agency_score" gives
// {"score": 1..5, "rationale"} (CAScore of the text after the last
// "Final completion:" / "Response:" style marker of the last user
// message), "pairwise_preference" gives {"winner": "A"|"B"|"tie",
// "rationale"} (comparing CACount of the "Response A" and "Response B"
// sections), "collective_agency_group_scores" gives {"scores": [{"label",
// "rationale", "score"}]}, one per "### Solution <label>:" section, each
// scored as that solution alone (Options.JudgeGroupFault answers every
// group badly or with a bias for the first shown), "dilemmas" gives {"items": [{category, task}]} (n from the
// first number in the prompt, else 5), "persona_pair" gives {"a", "b"}
// (two opposed personas) and "persona_opposition" gives {"rationale",
// "conflict", "opposition"} (conflicting, 4, when the two personas
// differ). Without a schema, the policy model
// or an adapter answers as a scripted agent and any other model as a
// plain-text judge ("Score: N\nRationale: ..."). Judge faults (malformed,
// out-of-range, refusal) are injected at the Options.Judge*Rate rates, on
// the games' judges too. The judges are reward's, which any game may be
// scored by (judge.kind ca and pairwise evaluations of every game's
// evaluation set), and the generator is dataset/generate's: they stay
// here, beside the tokenizer and the fault injection they share.
//
// Transport faults (Options.ErrorRate, RateLimitRate, HangRate, DropRate)
// and latency (lognormal with a heavy tail, plus per generated token) apply
// to /tokenize, /detokenize, /v1/completions and /v1/chat/completions,
// drawn from an RNG seeded by Options.FaultSeed and independent of content.
package sim
