package contract_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley/llm/contract"
)

// TestContractDevServer runs the suite against the Python CPU dev server
// serving the tiny model, with a LoRA adapter made by peft, so that the
// simulator and the dev server are held to one contract. It needs the
// project's Python environment and the tiny model (make test provides
// PARLEY_PYTHON and PARLEY_TINY_MODEL).
func TestContractDevServer(t *testing.T) {
	py, model := os.Getenv("PARLEY_PYTHON"), os.Getenv("PARLEY_TINY_MODEL")
	if py == "" || model == "" {
		t.Skip("PARLEY_PYTHON and PARLEY_TINY_MODEL unset: run through make test")
	}
	root, _ := filepath.Abs("../..")
	adapter := filepath.Join(t.TempDir(), "adapter")
	mk := `
import sys, torch
from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
torch.manual_seed(0)
m = get_peft_model(AutoModelForCausalLM.from_pretrained(sys.argv[1]), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
m.save_pretrained(sys.argv[2])
`
	if out, err := exec.Command(py, "-c", mk, model, adapter).CombinedOutput(); err != nil {
		t.Fatalf("make adapter: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(py, filepath.Join(root, "scripts", "devserver.py"), "--model", model, "--served-model-name", "tiny",
		"--port", fmt.Sprint(port), "--threads", "1")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() { // keep the pipe drained
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("dev server not healthy after 2 minutes")
		}
		time.Sleep(200 * time.Millisecond)
	}
	contract.Run(t, contract.Config{BaseURL: url, Model: "tiny", LoRAPath: adapter})
}
