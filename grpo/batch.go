package grpo

import (
	"fmt"
	"math"
	"strconv"

	"github.com/parleyhq/parley/dataset"
)

// MaskMode selects which sequences of a rollout are trained, by their Kind.
type MaskMode string

// Mask modes (the `mask` config switch of seed 000).
const (
	// MaskDialogue trains the agents' dialogue sequences only: the reward
	// comes from the final completion, the gradient goes to the
	// deliberation. The default.
	MaskDialogue MaskMode = "dialogue"
	// MaskDialogueFinal trains the dialogue and the final completion.
	MaskDialogueFinal MaskMode = "dialogue+final"
	// MaskFinal trains the final completion (or the single-agent answer)
	// only.
	MaskFinal MaskMode = "final"
)

// MaskModes lists the mask modes, for validation and help.
var MaskModes = []string{string(MaskDialogue), string(MaskDialogueFinal), string(MaskFinal)}

// ParseMaskMode validates a mask mode name.
func ParseMaskMode(s string) (MaskMode, error) {
	switch m := MaskMode(s); m {
	case MaskDialogue, MaskDialogueFinal, MaskFinal:
		return m, nil
	}
	return "", fmt.Errorf("grpo.ParseMaskMode: unknown mask mode %q, want %q, %q or %q",
		s, MaskDialogue, MaskDialogueFinal, MaskFinal)
}

// Trains reports whether sequences of kind (dataset.KindDialogue or
// dataset.KindFinal) get gradient under m.
func (m MaskMode) Trains(kind string) bool {
	switch kind {
	case dataset.KindDialogue:
		return m == MaskDialogue || m == MaskDialogueFinal
	case dataset.KindFinal:
		return m == MaskFinal || m == MaskDialogueFinal
	}
	return false
}

// BatchOptions configures BuildBatch.
type BatchOptions struct {
	// RunID is written in every row; empty keeps each rollout's RunID.
	RunID string
	// Step is the step this batch trains.
	Step int
	// PolicyVersion is the policy that sampled the batch; every rollout
	// must carry the same version, unless MixedVersions.
	PolicyVersion int
	// MixedVersions lets the rollouts carry any policy version (a
	// streaming batch): each row records its rollout's.
	MixedVersions bool
	// Mask is a MaskMode name; empty means MaskDialogue.
	Mask string
}

// BatchStats describes a batch BuildBatch assembled.
type BatchStats struct {
	// Rollouts is the number of rollouts given; RolloutsWithRows of them
	// produced at least one row.
	Rollouts         int `json:"rollouts"`
	RolloutsWithRows int `json:"rollouts_with_rows"`
	// Rows is the number of rows (training sequences).
	Rows int `json:"rows"`
	// Tokens is the total sequence length of the rows; TrainedTokens the
	// number of mask-1 tokens among them.
	Tokens        int64 `json:"tokens"`
	TrainedTokens int64 `json:"trained_tokens"`
	// StalenessSum and StalenessMax are over the trained tokens'
	// staleness, Step-1 minus the version that sampled the token (0: on
	// policy); OffPolicyTokens counts those above 0.
	StalenessSum    int64 `json:"staleness_sum"`
	StalenessMax    int64 `json:"staleness_max"`
	OffPolicyTokens int64 `json:"off_policy_tokens"`
	// NotTrainedKind counts sequences the mask mode does not train.
	NotTrainedKind int `json:"not_trained_kind"`
	// NotTrainedRole counts sequences of roles that are not trained (a
	// frozen opponent, a covert adversary) or got no advantage.
	NotTrainedRole int `json:"not_trained_role"`
	// EmptyMask counts sequences the mask mode trains but whose loss mask
	// has no 1: they are skipped.
	EmptyMask int `json:"empty_mask"`
	// SkippedUnscored counts failed or unjudged rollouts given to
	// BuildBatch; they are skipped (ComputeAdvantages never keeps them).
	SkippedUnscored int `json:"skipped_unscored"`
}

// BuildBatch assembles the training batch of one step from the kept rollouts
// of ComputeAdvantages: one row per trained sequence of every rollout, in
// input order. A sequence is trained when the mask mode trains its kind and
// its role is trained and scored (Scored); each row carries its own role's
// reward and advantage. A row's SampleID is the rollout ID, "/", and the
// sequence's index in Rollout.Sequences. Its advantages are the role's
// Advantage on mask-1 tokens and 0 elsewhere; its inference logprobs are
// the sampling logprobs on mask-1 tokens and 0 elsewhere. Token slices are
// copied.
//
// A sequence whose input_ids, loss_mask and logprobs differ in length, whose
// mask holds anything but 0 and 1, whose kind is unknown, or whose mask-1
// logprobs are not finite is an error naming the rollout; so is a rollout
// with no ID, with a non-finite advantage, or sampled by another policy
// version than opts.PolicyVersion.
func BuildBatch(rollouts []dataset.Rollout, opts BatchOptions) ([]dataset.BatchRow, BatchStats, error) {
	st := BatchStats{Rollouts: len(rollouts)}
	mask := MaskDialogue
	if opts.Mask != "" {
		m, err := ParseMaskMode(opts.Mask)
		if err != nil {
			return nil, st, fmt.Errorf("grpo.BuildBatch: %w", err)
		}
		mask = m
	}
	if opts.Step < 0 || opts.Step > math.MaxInt32 {
		return nil, st, fmt.Errorf("grpo.BuildBatch: step %d out of range", opts.Step)
	}
	if opts.PolicyVersion < 0 || opts.PolicyVersion > math.MaxInt32 {
		return nil, st, fmt.Errorf("grpo.BuildBatch: policy version %d out of range", opts.PolicyVersion)
	}

	var rows []dataset.BatchRow
	for ri := range rollouts {
		r := &rollouts[ri]
		if r.RolloutID == "" {
			return nil, st, fmt.Errorf("grpo.BuildBatch: rollout %d (group %q) has no rollout_id", ri, r.GroupID)
		}
		scored := false
		for k := range r.Roles {
			ro := &r.Roles[k]
			if !Scored(r, ro) {
				continue
			}
			scored = true
			if a := float64(ro.Advantage); math.IsNaN(a) || math.IsInf(a, 0) {
				return nil, st, fmt.Errorf("grpo.BuildBatch: rollout %q role %s has advantage %v", r.RolloutID, ro.Role, a)
			}
		}
		if !scored {
			st.SkippedUnscored++
			continue
		}
		pv := opts.PolicyVersion
		if opts.MixedVersions {
			pv = int(r.PolicyVersion)
		}
		if pv != int(r.PolicyVersion) {
			return nil, st, fmt.Errorf("grpo.BuildBatch: rollout %q was sampled by policy version %d, batch is for %d",
				r.RolloutID, r.PolicyVersion, opts.PolicyVersion)
		}
		runID := opts.RunID
		if runID == "" {
			runID = r.RunID
		}
		before := len(rows)
		for si, s := range r.Sequences {
			if err := checkSequence(s); err != nil {
				return nil, st, fmt.Errorf("grpo.BuildBatch: rollout %q sequence %d: %w", r.RolloutID, si, err)
			}
			if !mask.Trains(s.Kind) {
				st.NotTrainedKind++
				continue
			}
			ro := r.Role(s.Role)
			if ro == nil || !Scored(r, ro) {
				st.NotTrainedRole++
				continue
			}
			adv := ro.Advantage
			n := len(s.InputIDs)
			row := dataset.BatchRow{
				RunID:             runID,
				SampleID:          r.RolloutID + "/" + strconv.Itoa(si),
				GroupID:           r.GroupID,
				RolloutID:         r.RolloutID,
				PromptID:          r.PromptID,
				Step:              int32(opts.Step),
				PolicyVersion:     int32(pv),
				Env:               r.Env,
				Role:              s.Role,
				Kind:              s.Kind,
				InputIDs:          append([]int32(nil), s.InputIDs...),
				LossMask:          append([]int8(nil), s.LossMask...),
				InferenceLogprobs: make([]float32, n),
				Advantages:        make([]float32, n),
				Reward:            ro.Reward,
				Advantage:         adv,
				Temperature:       r.Temperature,
				TokenVersions:     tokenVersions(s, pv),
			}
			var trained int64
			for t, m := range s.LossMask {
				if m == 1 {
					trained++
					row.InferenceLogprobs[t] = s.Logprobs[t]
					row.Advantages[t] = adv
					stale := int64(opts.Step - 1 - int(row.TokenVersions[t]))
					st.StalenessSum += stale
					st.StalenessMax = max(st.StalenessMax, stale)
					if stale > 0 {
						st.OffPolicyTokens++
					}
				}
			}
			if trained == 0 {
				st.EmptyMask++
				continue
			}
			st.Tokens += int64(n)
			st.TrainedTokens += trained
			rows = append(rows, row)
		}
		if len(rows) > before {
			st.RolloutsWithRows++
		}
	}
	st.Rows = len(rows)
	return rows, st, nil
}

// tokenVersions is s's per-token versions, or pv on every token when s
// has none (a rollout recorded before they were).
func tokenVersions(s dataset.Sequence, pv int) []int32 {
	if len(s.Versions) == len(s.InputIDs) {
		return append([]int32(nil), s.Versions...)
	}
	out := make([]int32, len(s.InputIDs))
	for i := range out {
		out[i] = int32(pv)
	}
	return out
}

// checkSequence validates the invariants of one token sequence.
func checkSequence(s dataset.Sequence) error {
	if s.Kind != dataset.KindDialogue && s.Kind != dataset.KindFinal {
		return fmt.Errorf("unknown kind %q", s.Kind)
	}
	if len(s.LossMask) != len(s.InputIDs) || len(s.Logprobs) != len(s.InputIDs) {
		return fmt.Errorf("lengths differ: input_ids %d, loss_mask %d, logprobs %d",
			len(s.InputIDs), len(s.LossMask), len(s.Logprobs))
	}
	for t, m := range s.LossMask {
		switch m {
		case 0:
		case 1:
			if lp := float64(s.Logprobs[t]); math.IsNaN(lp) || math.IsInf(lp, 0) {
				return fmt.Errorf("token %d: logprob %v", t, lp)
			}
		default:
			return fmt.Errorf("token %d: loss_mask %d, want 0 or 1", t, m)
		}
	}
	return nil
}
