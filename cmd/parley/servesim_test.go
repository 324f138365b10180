package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/app"
	"github.com/parleyhq/parley/sim"
)

// mustSimGames is every registered game's serve-sim answers with their
// defaults, as serve-sim gives them to sim.New.
func mustSimGames(t testing.TB) []sim.Answerer {
	t.Helper()
	games, err := app.SimGames(nil)
	if err != nil {
		t.Fatal(err)
	}
	return games
}

// TestServeSimLedgerMode: serve-sim's --ledger-mode still sets the
// endowment game's ledger judge (now its option ledger_mode), and a bad
// mode is refused before serving.
func TestServeSimLedgerMode(t *testing.T) {
	cmd := newServeSimCmd(quietApp())
	cmd.SetArgs([]string{"--addr", "127.0.0.1:0", "--ledger-mode", "loose"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "ledger_mode") {
		t.Errorf("--ledger-mode loose = %v, want an error naming ledger_mode", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cmd = newServeSimCmd(quietApp())
	cmd.SetArgs([]string{"--addr", addr, "--ledger-mode", "any-number"})
	go func() { done <- cmd.ExecuteContext(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve-sim: %v", err)
		}
	}()
	url := "http://" + addr
	for i := 0; ; i++ {
		resp, err := http.Get(url + sim.PathHealth)
		if err == nil {
			resp.Body.Close()
			break
		}
		if i == 200 {
			t.Fatalf("serve-sim did not start: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	body := `{"model":"sim-judge","messages":[{"role":"user","content":"The holder's reply to record:\n<<<\nxq 17 zz\n>>>"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"endowment_ledger"}}}`
	resp, err := http.Post(url+sim.PathChat, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var chat struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&chat); err != nil || len(chat.Choices) == 0 {
		t.Fatalf("chat answer: %v", err)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(chat.Choices[0].Message.Content), &v); err != nil || v["type"] != "gift" || v["amount"] != 17.0 {
		t.Errorf("verdict %s (%v), want a gift of 17 (any-number mode)", chat.Choices[0].Message.Content, err)
	}
}
