package train_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/grpo"
	"github.com/parleyhq/parley/internal/retry"
	"github.com/parleyhq/parley/llm"
	"github.com/parleyhq/parley/reward"
	"github.com/parleyhq/parley/rollout"
	"github.com/parleyhq/parley/rollout/deliberation"
	"github.com/parleyhq/parley/sim"
	"github.com/parleyhq/parley/train"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// TestSimServerChild is the inference server train.Run starts in
// TestRunRestartsDeadEngine: serve-sim whose engine dies after a number
// of completions, on the port the parent chose.
func TestSimServerChild(t *testing.T) {
	addr := os.Getenv("PARLEY_TEST_SIM_ADDR")
	if addr == "" {
		t.Skip("child of TestRunRestartsDeadEngine")
	}
	s, err := sim.New(sim.Options{EngineDiesAfter: 150})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = http.Serve(ln, s.Handler())
}

// TestRunRestartsDeadEngine runs train.Run with a server it starts whose
// engine dies mid-run (vLLM's EngineDeadError): the run restarts the server
// and finishes every step once, and records the servers in server.json.
func TestRunRestartsDeadEngine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	t.Setenv("PARLEY_TEST_SIM_ADDR", addr)
	dir := dataset.RunDir(filepath.Join(t.TempDir(), "run"))
	core, logs := observer.New(zap.InfoLevel)
	client, err := llm.New(llm.Options{Endpoints: []string{"http://" + addr}, Retry: retry.Policy{BackoffBase: time.Millisecond, MaxRetries: 2}, Logger: zap.New(core)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	judge, err := reward.NewRuleJudge(reward.RuleOptions{Kind: reward.RuleKeywords, Keywords: []string{"together", "both"}})
	if err != nil {
		t.Fatal(err)
	}
	all, err := deliberation.SampleCurriculum()
	if err != nil {
		t.Fatal(err)
	}
	prompts := dataset.SelectSplit(all, dataset.SplitTrain)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ft := &fakeTrainer{dir: dir, consumed: map[int]int{}, versions: map[int]int{}}
	go ft.run(ctx)
	st, err := train.Run(ctx, train.RunOptions{
		Loop: train.LoopOptions{
			Dir: dir, RunID: "t", Seed: 5, Steps: 4, Prompts: prompts, PromptsPerStep: 4,
			Rollout: rollout.RunnerOptions{
				Game:   deliberation.New(deliberation.Options{MaxRounds: 3, TurnTokens: 48, FinalTokens: 64}),
				Policy: client, Model: sim.DefaultModel, Sampling: llm.Sampling{MaxTokens: 48, Temperature: 1},
				GroupSize: 4, Concurrency: 16,
			},
			Judge: judge, JudgeConcurrency: 4,
			Advantage: grpo.AdvantageOptions{Mode: grpo.ModeGroup, KeepZeroVariance: true}, Mask: "dialogue",
			AdapterPrefix: "p", DonePoll: 2 * time.Millisecond, TrainerTimeout: time.Minute,
		},
		FrozenConfig: []byte("run: {name: t}\n"), Server: client, Model: sim.DefaultModel,
		ServerCommand:      []string{os.Args[0], "-test.run=^TestSimServerChild$"},
		ServerStartTimeout: time.Minute,
		Handshake:          train.HandshakeFile,
		Logger:             zap.New(core),
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st.Step != 4 {
		t.Fatalf("state step %d, want 4", st.Step)
	}
	for step := 1; step <= 4; step++ {
		if ft.consumed[step] != 1 {
			t.Errorf("step %d trained %d times, want once", step, ft.consumed[step])
		}
	}
	if n := logs.FilterMessage("the inference engine died; restarting it").Len(); n < 1 {
		t.Errorf("the engine was restarted %d times, want at least once (it dies after 150 completions)", n)
	}
	// Waiting for the server it started (and restarted), the run does not
	// warn that the endpoint is down (issue 28 item 7).
	for _, e := range logs.FilterMessage("llm: endpoint taken out of rotation").All() {
		if e.ContextMap()["why"] == "health check failed" {
			t.Errorf("warned while the server it started came up: %s %v", e.Message, e.ContextMap())
		}
	}
	var rec struct {
		Servers []llm.ServerInfo `json:"servers"`
	}
	b, err := os.ReadFile(filepath.Join(dir.Root(), train.ServerFile))
	if err != nil || json.Unmarshal(b, &rec) != nil || len(rec.Servers) != 1 || !strings.Contains(fmt.Sprint(rec.Servers[0].Models), sim.DefaultModel) {
		t.Errorf("server.json = %s, %v; want the one server and its model", b, err)
	}
}
