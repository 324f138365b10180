// Package grpo is the math of GRPO on parley's rollouts, with no I/O:
//   - advantages per (group, role): group-relative (GRPO, with the
//     population std unless StdDDOF says otherwise), group-mean (Dr. GRPO)
//     and per-role moving baselines, with zero-variance groups dropped and
//     failed, unscored or untrained roles excluded, never scored 0
//     (ComputeAdvantages: one formula per (group, role), the step's
//     statistics around it); a zero-sum game's sides are each compared
//     only with the same side;
//   - loss masks: which sequences of a rollout are trained (ParseMaskMode);
//   - batch assembly: one dataset.BatchRow per trained sequence, carrying
//     its own role's reward and advantage (BuildBatch).
//
// The training loop that runs these each step and its state are package
// train's; the trainer handshake is package handshake's.
package grpo
