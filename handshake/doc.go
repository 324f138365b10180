// Package handshake is the contract between parley and the PyTorch
// trainer (scripts/parley_trainer): how a step's batch reaches the trainer
// and how its checkpoint comes back, through the run directory (file mode)
// or over HTTP (Server, for a trainer on another machine). The training
// loop (package train) writes the batches and waits here for the DONE.
//
// # The contract
//
// The run directory (dataset.RunDir) is shared by two writers, parley and
// the trainer, and every file has exactly one writer:
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
//	checkpoints/step-N/REFUSED           trainer  written (instead of DONE)
//	metrics.jsonl                        parley   one line per completed step, appended
//
// Every write is temp-then-rename with fsync (internal/fsutil), so a reader
// sees a file whole or not at all. A step with a DONE is final: parley never
// samples it again. A batch with a verified .ready is final: it may already
// have been trained, so it is never re-sampled. A file is only ever
// re-created by its own writer, and only while it is not final.
//
// In file mode the trainer polls batches/ for the next .ready, trains,
// writes the checkpoint and then DONE (Done, WriteDone); parley waits for
// it (WaitDone). In HTTP mode the trainer reads batches through GET
// /v1/batches/… and uploads its checkpoint with POST
// /v1/batches/{step}/done; the Server writes the checkpoint and DONE on its
// behalf, in the same order.
package handshake
