// Package train is parley's training loop: each step it samples the step's
// groups (rollout), judges them (reward), computes advantages and builds the
// batch (grpo), writes the rollouts and the batch into the run directory
// (dataset.RunDir), hands the batch to the PyTorch trainer through files or
// the HTTP handshake server (package handshake, whose doc states which
// writer owns which file), waits for the trainer's DONE, loads the new
// adapter into every inference endpoint, and records metrics and state. It
// also supervises the inference server and the trainer it starts, and runs
// the evaluations during training.
//
// Every phase of a step is idempotent and keyed by the run directory's
// files, so a crash at any point resumes from state.json without losing
// or repeating a step.
package train
