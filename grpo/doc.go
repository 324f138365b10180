// Package grpo turns scored rollouts into a GRPO training batch and hands it
// to the trainer.
//
// It holds the parts of the training loop that are pure bookkeeping:
//   - advantages: group-relative (GRPO), group-mean (Dr. GRPO) and per-role
//     moving baselines, with zero-variance groups dropped and failed or
//     unjudged rollouts excluded, never scored 0 (ComputeAdvantages);
//   - loss masks: which sequences of a rollout are trained (ParseMaskMode);
//   - batch assembly: one dataset.BatchRow per trained sequence (BuildBatch);
//   - the run directory layout, the resumable state.json (SaveState,
//     LoadState) and the trainer handshake: the DONE marker of file mode
//     (WaitDone) and the HTTP handshake server (NewHandshakeServer).
//
// The package never tokenizes and never reads or writes parquet itself:
// batches come in and go out as []dataset.BatchRow, and files are addressed
// through RunDir.
package grpo
