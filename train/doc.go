// Package train is parley's training loop: each step it samples the step's
// groups (rollout), judges them (reward), computes advantages and builds the
// batch (grpo), writes the rollouts and the batch into the run directory
// (dataset.RunDir), hands the batch to the PyTorch trainer through files or
// the HTTP handshake server, waits for the trainer's DONE, loads the new
// adapter into every inference endpoint, and records metrics and state.
//
// # The handshake contract
//
// The run directory is shared by two writers, parley and the trainer, and
// every file has exactly one writer:
//
//	file                                 writer   final when
//	config.yaml                          parley   written (frozen at start)
//	state.json                           parley   never (rewritten atomically per step)
//	rollouts/step-N.parquet              parley   written (atomic rename)
//	rollouts/step-N.metrics.json         parley   written
//	batches/step-N.parquet               parley   its .ready is written
//	batches/step-N.ready                 parley   written (last, after the batch)
//	checkpoints/step-N/ (adapter files)  trainer  DONE is written
//	checkpoints/step-N/DONE              trainer  written (last, after the adapter)
//	metrics.jsonl                        parley   one line per completed step, appended
//
// Every write is temp-then-rename with fsync (internal/fsutil), so a reader
// sees a file whole or not at all. A step with a DONE is final: parley never
// samples it again. A batch with a verified .ready is final: it may already
// have been trained, so it is never re-sampled. A file is only ever
// re-created by its own writer, and only while it is not final. In HTTP
// mode the trainer reads batches through GET /v1/batches/… and uploads its
// checkpoint with POST /v1/batches/{step}/done; parley writes the
// checkpoint and DONE on its behalf, in the same order.
//
// Every phase of a step is idempotent and keyed by these files, so a crash
// at any point resumes from state.json without losing or repeating a step.
package train
