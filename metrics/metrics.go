// Package metrics declares the keys of a run's metrics.jsonl, once: the
// training loop (package train) writes them, the evaluation during
// training (eval/harness) writes its own, and the report (eval/report) and
// the command line read them back.
//
// metrics.jsonl holds one JSON object a line:
//
//   - a step line per completed step: the Key… constants below for the
//     step's sampling, judging and batch, reward_mean/<role> when the
//     roles' rewards differ (RoleRewardPrefix), the game's own keys
//     (rollout.Spec.Metrics, the game's strings), and the trainer's
//     metrics from the step's DONE under TrainerPrefix;
//   - an evaluation line per evaluated step, {"step": N, "kind": "eval",
//     …} (KeyKind, EvalKind), its keys under EvalPrefix;
//   - an audit line per audited step (judge.audit), {"step": N, "kind":
//     "audit", …} (AuditKind), its keys under AuditPrefix.
//
// The package imports only the standard library, so that any package may
// use it.
package metrics

// Key is a key of a metrics.jsonl line.
type Key string

// Line is one metrics.jsonl line as parley builds it. It encodes to JSON
// exactly as a map[string]any holding the same entries.
type Line map[Key]any

// Strings returns l keyed by plain strings, as the loop's callbacks and
// the Prometheus gauges take a line.
func (l Line) Strings() map[string]any {
	out := make(map[string]any, len(l))
	for k, v := range l {
		out[string(k)] = v
	}
	return out
}

// Keys of every line.
const (
	// KeyStep is the step the line is about (steps count from 1).
	KeyStep Key = "step"
	// KeyKind tells an evaluation line (EvalKind) from a step line, which
	// has none.
	KeyKind Key = "kind"
)

// KeyEvals is a sidecar's list of the held-out evaluations finished since
// the previous batch (train.EvalReport), for the trainer's TensorBoard and
// W&B; it is not written to metrics.jsonl, where each evaluation has its
// own line.
const KeyEvals Key = "evals"

// EvalKind is KeyKind's value on an evaluation line.
const EvalKind = "eval"

// AuditKind is KeyKind's value on an audit line.
const AuditKind = "audit"

// Keys of a step line: the step's sampling, judging and batch. The score
// keys are the judge's score (CA 1–5, a rule's 0–1, …) min, mean and max
// within each group, averaged over the step's groups.
const (
	// KeyPolicyVersion is the version of the policy that sampled the step.
	KeyPolicyVersion Key = "policy_version"
	KeyScoreMin      Key = "score_min"
	KeyScoreMean     Key = "score_mean"
	KeyScoreMax      Key = "score_max"
	// KeyRewardMean and KeyRewardStd (population) are over the step's
	// scored (rollout, trained role) outcomes.
	KeyRewardMean Key = "reward_mean"
	KeyRewardStd  Key = "reward_std"
	// KeyAgreementRate is the share of rollouts that reached agreement;
	// KeyRoundsToAgreement their mean rounds; KeyMeanRounds the mean
	// rounds of every rollout.
	KeyAgreementRate     Key = "agreement_rate"
	KeyRoundsToAgreement Key = "rounds_to_agreement"
	KeyMeanRounds        Key = "mean_rounds"
	// KeyRollouts counts the step's rollouts, KeyRolloutsFailed those whose
	// sampling failed.
	KeyRollouts       Key = "rollouts"
	KeyRolloutsFailed Key = "rollouts_failed"
	// KeyRolloutsDroppedOffPolicy counts the rollouts left out of the
	// step's batch, unjudged and unrecorded, because the policy that
	// sampled them is more than train.max_off_policy_steps older than the
	// one the batch trains (only with that key set).
	KeyRolloutsDroppedOffPolicy Key = "rollouts_dropped_off_policy"
	// KeyJudgeFailed counts the rollouts whose judging failed (left out,
	// never scored 0), KeyJudgeCached those the judge's cache answered.
	KeyJudgeFailed Key = "judge_failed"
	KeyJudgeCached Key = "judge_cached"
	// Position bias of group judging (judge.mode group with
	// judge.position_check): KeyJudgePositionChecked counts the step's
	// scores re-scored in reversed order, KeyJudgePositionMoved is the
	// share of them whose score moved (present only when some were).
	KeyJudgePositionChecked Key = "judge_position_checked"
	KeyJudgePositionMoved   Key = "judge_position_moved"
	// KeyGroups counts the step's groups, KeyGroupsDroppedZeroVariance
	// those dropped because every reward in them was equal.
	KeyGroups                    Key = "groups"
	KeyGroupsDroppedZeroVariance Key = "groups_dropped_zero_variance"
	// Dynamic sampling (train.dynamic_sampling): KeyGroupsSampled counts
	// the groups the step played, KeyGroupsInformative those whose
	// advantages were not all zero, KeyGroupsTrained those its batch
	// trains (at most rollout.prompts_per_step), and KeyOversampleRatio
	// is the groups sampled per group the batch asks for.
	KeyGroupsSampled     Key = "groups_sampled"
	KeyGroupsInformative Key = "groups_informative"
	KeyGroupsTrained     Key = "groups_trained"
	KeyOversampleRatio   Key = "oversample_ratio"
	// Streaming sampling (train.sampling: stream): the groups cancelled
	// in flight and dropped once judged since the step before, their
	// policy older than a batch may train, and the newest policy among
	// the step's groups (KeyPolicyVersion is the oldest).
	KeyGroupsCancelledStale Key = "groups_cancelled_stale"
	KeyGroupsDroppedStale   Key = "groups_dropped_stale"
	KeyPolicyVersionMax     Key = "policy_version_max"
	// The adaptive curriculum (curriculum.sampler: adaptive): the step's
	// groups per category (CurriculumDrawPrefix + the category) and the
	// prompt rows resting after it, solved or hopeless.
	CurriculumDrawPrefix         Key = "curriculum/draw/"
	KeyCurriculumRetiredSolved   Key = "curriculum/retired_solved"
	KeyCurriculumRetiredHopeless Key = "curriculum/retired_hopeless"
	// KeyGroupsResumed counts the step's groups read from the stream's
	// journal: finished before a crash, not sampled again.
	KeyGroupsResumed Key = "groups_resumed"
	// Token counts of the step's sampling (rollout.Summary).
	KeyPromptTokens                 Key = "prompt_tokens"
	KeySampledTokens                Key = "sampled_tokens"
	KeyPrefixBreaks                 Key = "prefix_breaks"
	KeySequencesPerRollout          Key = "sequences_per_rollout"
	KeyTrainerTokensPerSampledToken Key = "trainer_tokens_per_sampled_token"
	KeyPromptTokensSent             Key = "prompt_tokens_sent"
	KeyClosedTurns                  Key = "closed_turns"
	// The step's batch (grpo.BatchStats): its rows, tokens and the
	// tokens with gradient.
	KeyBatchRows     Key = "batch_rows"
	KeyBatchTokens   Key = "batch_tokens"
	KeyTrainedTokens Key = "trained_tokens"
	// Timings of the step's phases, in seconds.
	KeySampleSeconds      Key = "sample_seconds"
	KeyJudgeSeconds       Key = "judge_seconds"
	KeyWaitTrainerSeconds Key = "wait_trainer_seconds"
	// The policy endpoints during the step's sampling (rollout.Summary):
	// the share of prompt tokens their prefix caches served, the most and
	// mean completions one endpoint was sent, and sessions moved off
	// their endpoint (dialogue-affine routing, llm.Session).
	KeyPrefixCacheHitRate Key = "policy/prefix_cache_hit_rate"
	KeyEndpointLoadMax    Key = "policy/endpoint_load_max"
	KeyEndpointLoadMean   Key = "policy/endpoint_load_mean"
	KeySessionMoves       Key = "policy/session_moves"
	// The requests in flight on an endpoint, averaged over the step's
	// sampling time and over endpoints, and the share of that time every
	// slot of an endpoint (policy.max_concurrent_per_endpoint, its
	// in-flight target) was held (rollout.Summary, from the client).
	KeyEndpointInFlightMean  Key = "policy/inflight_mean"
	KeyEndpointAtTargetShare Key = "policy/at_target_share"
	// The requests the policy's servers report running
	// (vllm:num_requests_running, summed over endpoints), read every
	// train.serving_sample_every since the step before: their mean, the
	// least reading and how many readings.
	KeyServerRunningMean    Key = "policy/server_running_mean"
	KeyServerRunningMin     Key = "policy/server_running_min"
	KeyServerRunningSamples Key = "policy/server_running_samples"
	// KeyEndpointsLost counts the policy endpoints out of rotation at the
	// end of the step's sampling because an adapter load could not reach
	// them (llm.Client.Lost): the run goes on without them until they
	// answer again.
	KeyEndpointsLost Key = "policy/endpoints_lost"
	// The league's churn and size (roles.<role>.policy: league): adapter
	// loads and unloads of the step, members over every league role.
	KeyLeagueLoads   Key = "league/loads"
	KeyLeagueUnloads Key = "league/unloads"
	KeyLeagueMembers Key = "league/members"
	// The full-weights update after the step (trainer.full_finetune):
	// its whole time, the time the endpoints were paused, the transfer's
	// and the verification's, how many runtime parameters' checksums were
	// compared with the trainer's files (and how many could not be), and
	// whether the weights had to be transferred at all (0: the endpoints
	// already held them, a resumed update).
	KeyUpdateSeconds         Key = "update_seconds"
	KeyUpdatePauseSeconds    Key = "update_pause_seconds"
	KeyUpdateTransferSeconds Key = "update_transfer_seconds"
	KeyUpdateVerifySeconds   Key = "update_verify_seconds"
	KeyUpdateChecksums       Key = "update_checksums_compared"
	KeyUpdateChecksumsSkip   Key = "update_checksums_not_comparable"
	KeyUpdateTransferred     Key = "update_transferred"
	KeyUpdateProbeMeanAbs    Key = "update_probe_mean_abs_logprob_diff"
	// Off-policy tokens of the step's batch: the mean staleness of the
	// trained tokens (updates between the policy that sampled a token and
	// the one the step trains), its maximum, and the share of trained
	// tokens with staleness above 0.
	KeyStalenessMean     Key = "staleness_mean"
	KeyStalenessMax      Key = "staleness_max"
	KeyOffPolicyFraction Key = "off_policy_token_fraction"
	// KeySampleMetricsLost is true on the line of a trained step whose
	// sampling metrics were lost: it holds the trainer's alone.
	KeySampleMetricsLost Key = "sample_metrics_lost"
)

// Keys of a step line about the judge's API (written when the judge asks
// an LLM, reward.Metered): what it was asked and paid since the previous
// step line, from its chat client's counters (llm/chat Stats). Calls are
// requests sent, each with its retries; a cache hit is no call.
const (
	// JudgePrefix is the prefix of the keys below.
	JudgePrefix Key = "judge/"
	// KeyJudgeCalls counts requests sent; KeyJudgeCallsFailed those that
	// failed after their retries; KeyJudgeCacheHits the verdicts the
	// judge cache (or an identical request in flight) answered.
	KeyJudgeCalls       = JudgePrefix + "calls"
	KeyJudgeCallsFailed = JudgePrefix + "calls_failed"
	KeyJudgeCacheHits   = JudgePrefix + "cache_hits"
	// KeyJudgeAttempts counts HTTP requests made, KeyJudgeRetries those
	// after a request's first, KeyJudge429 those answered 429 (rate
	// limited).
	KeyJudgeAttempts = JudgePrefix + "attempts"
	KeyJudgeRetries  = JudgePrefix + "retries"
	KeyJudge429      = JudgePrefix + "http_429"
	// KeyJudgePromptTokens, KeyJudgeCompletionTokens and
	// KeyJudgeCachedTokens total the usage the API reported on every
	// answered attempt; KeyJudgeCachedShare is cached over prompt tokens
	// (the share the API's prompt cache served).
	KeyJudgePromptTokens     = JudgePrefix + "prompt_tokens"
	KeyJudgeCompletionTokens = JudgePrefix + "completion_tokens"
	KeyJudgeCachedTokens     = JudgePrefix + "cached_tokens"
	KeyJudgeCachedShare      = JudgePrefix + "cached_share"
	// KeyJudgeLatencyP50 and KeyJudgeLatencyP95 are the median and 95th
	// percentile of the calls' latency, first attempt to last, in
	// seconds (written when the step made a call).
	KeyJudgeLatencyP50 = JudgePrefix + "latency_p50_s"
	KeyJudgeLatencyP95 = JudgePrefix + "latency_p95_s"
	// KeyJudgeCost is the step's cost at judge.price and KeyJudgeCostTotal
	// the run's so far (this process's steps and, after a resume, those
	// metrics.jsonl held); written only when judge.price is set.
	KeyJudgeCost      = JudgePrefix + "cost_usd"
	KeyJudgeCostTotal = JudgePrefix + "cost_usd_total"
	// KeyJudgeBackends lists the backends that answered the step's calls
	// as "model fingerprint" strings (the reply's model and
	// system_fingerprint, "-" when it sent none), sorted: a list, so
	// TensorBoard and W&B leave it out. KeyJudgeBackendChanges counts
	// those not seen at an earlier step of the run: the judge changing
	// under the run (an API model update, a new fingerprint).
	KeyJudgeBackends       = JudgePrefix + "backends"
	KeyJudgeBackendChanges = JudgePrefix + "backend_changes"
	// KeyJudgeGoldScored counts the gold items (judge.gold) the judge
	// scored again at the step (every judge.gold.every steps);
	// KeyJudgeGoldMovedShare is the share of them whose score differs from
	// the gold file's, and KeyJudgeGoldMeanAbsChange the mean absolute
	// difference: a score that moves means the judge changed under the
	// run (a model update, a new fingerprint, a changed prompt).
	KeyJudgeGoldScored        = JudgePrefix + "gold_scored"
	KeyJudgeGoldMovedShare    = JudgePrefix + "gold_moved_share"
	KeyJudgeGoldMeanAbsChange = JudgePrefix + "gold_mean_abs_change"
	// KeyJudgeCorrLength, KeyJudgeCorrPersonaEcho and KeyJudgeCorrAgreement
	// are the reward-hacking monitors (reward.Monitors): the Pearson
	// correlation, over the step's judged rollouts of the trained policy,
	// of the score with the final's length in words, with the share of
	// its word 3-grams found in the persona texts, and with its count of
	// agreement phrases; absent with fewer than 3 judged or no spread.
	KeyJudgeCorrLength      = JudgePrefix + "corr_length"
	KeyJudgeCorrPersonaEcho = JudgePrefix + "corr_persona_echo"
	KeyJudgeCorrAgreement   = JudgePrefix + "corr_agreement"
)

// Prefixes of a step line's keys.
const (
	// RoleRewardPrefix + role is a trained role's reward mean, written
	// when the roles' rewards differ (a zero-sum game's sides).
	RoleRewardPrefix = KeyRewardMean + "/"
	// LeagueRatingPrefix + role and LeagueRDPrefix + role are the trained
	// policy's Glicko-2 rating and deviation against the role's league.
	LeagueRatingPrefix Key = "league/rating/"
	LeagueRDPrefix     Key = "league/rd/"
	// EndpointInFlightPrefix + "e<i>" and EndpointAtTargetPrefix + "e<i>"
	// are KeyEndpointInFlightMean and KeyEndpointAtTargetShare of the
	// policy's i-th endpoint alone, written when it has several.
	EndpointInFlightPrefix = KeyEndpointInFlightMean + "/"
	EndpointAtTargetPrefix = KeyEndpointAtTargetShare + "/"
	// TrainerPrefix + name is the trainer's metric name from the step's
	// DONE.
	TrainerPrefix Key = "trainer/"
)

// Keys of the trainer's metrics, as the loop records them from each step's
// DONE (under TrainerPrefix), that the report charts.
const (
	KeyTrainerLoss        = TrainerPrefix + "loss"
	KeyTrainerKL          = TrainerPrefix + "approx_kl"
	KeyTrainerKLRef       = TrainerPrefix + "kl_ref"
	KeyTrainerEntropy     = TrainerPrefix + "entropy"
	KeyTrainerGradNorm    = TrainerPrefix + "grad_norm"
	KeyTrainerGradNormMax = TrainerPrefix + "grad_norm_max"
	KeyTrainerClipFrac    = TrainerPrefix + "clip_frac"
	// KeyTrainerEmptyBatch is 1 on a step whose batch had nothing to
	// train (every group dropped for zero variance): the trainer made no
	// update and reports none of the metrics above.
	KeyTrainerEmptyBatch = TrainerPrefix + "empty_batch"
)

// Keys of an evaluation line (train.eval_every): the step's adapter
// against the base model on the held-out prompts. The keys under
// EvalPrefix are the step line's metrics on the evaluation set
// ("eval/score_mean", …) for the step's adapter, and under EvalPrefix +
// KeyBasePrefix for the base model. Win rate is in percent of verdicts, a
// tie counting half.
const (
	EvalPrefix    Key = "eval/"
	KeyBasePrefix Key = "base_"

	KeyEvalWinRate               = EvalPrefix + "win_rate"
	KeyEvalWins                  = EvalPrefix + "wins"
	KeyEvalTies                  = EvalPrefix + "ties"
	KeyEvalLosses                = EvalPrefix + "losses"
	KeyEvalScoreMean             = EvalPrefix + KeyScoreMean
	KeyEvalBaseScoreMean         = EvalPrefix + KeyBasePrefix + KeyScoreMean
	KeyEvalAgreementRate         = EvalPrefix + KeyAgreementRate
	KeyEvalBaseAgreementRate     = EvalPrefix + KeyBasePrefix + KeyAgreementRate
	KeyEvalRoundsToAgreement     = EvalPrefix + KeyRoundsToAgreement
	KeyEvalBaseRoundsToAgreement = EvalPrefix + KeyBasePrefix + KeyRoundsToAgreement
	// KeyEvalExcluded counts the comparisons left out (a side's rollout or
	// the judge failed), KeyEvalPrompts the held-out prompts,
	// KeyEvalSeconds the evaluation's time.
	KeyEvalExcluded = EvalPrefix + "excluded"
	KeyEvalPrompts  = EvalPrefix + "prompts"
	KeyEvalSeconds  = EvalPrefix + "seconds"
)

// Keys of an audit line (judge.audit): the audit judge's scores of a
// seeded sample of the step's judged final completions beside the
// training judge's scores of the same rollouts. The agreement keys are
// seed 000's table 7 (stats.Agree) on the rubric's levels, over the
// rollouts both judges scored.
const (
	AuditPrefix Key = "audit/"
	// KeyAuditSampled counts the rollouts drawn for the audit,
	// KeyAuditScored those the audit judge scored, KeyAuditFailed those
	// it failed on (down, rate-limited, garbage: never the step's).
	KeyAuditSampled = AuditPrefix + "sampled"
	KeyAuditScored  = AuditPrefix + "scored"
	KeyAuditFailed  = AuditPrefix + "failed"
	// KeyAuditExact and KeyAuditWithinOne are the % of identical scores
	// and of scores at most 1 apart; KeyAuditPearson and KeyAuditKappa
	// (quadratic-weighted) are absent where undefined (a constant judge).
	KeyAuditExact     = AuditPrefix + "exact"
	KeyAuditWithinOne = AuditPrefix + "within_one"
	KeyAuditPearson   = AuditPrefix + "pearson"
	KeyAuditKappa     = AuditPrefix + "kappa"
	// KeyAuditTrainScoreMean is the training judge's mean score on the
	// audited rollouts, KeyAuditScoreMean the audit judge's.
	KeyAuditTrainScoreMean = AuditPrefix + "train_score_mean"
	KeyAuditScoreMean      = AuditPrefix + "score_mean"
	// KeyAuditAlarm is 1 when the over-optimisation alarm fires at the
	// step (the training judge's mean rising while the audit judge's
	// falls over judge.audit.alarm_window audited steps), else 0.
	KeyAuditAlarm = AuditPrefix + "alarm"
)
