package contract_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/parleyhq/parley/internal/vllmtest"
	"github.com/parleyhq/parley/llm/contract"
)

// makeAdapter writes a random (non-zero) peft LoRA adapter for the tiny
// model, as the trainer saves them, into a temp folder.
func makeAdapter(t *testing.T, python, model string) string {
	t.Helper()
	adapter := filepath.Join(t.TempDir(), "adapter")
	mk := `
import sys, torch
from transformers import AutoModelForCausalLM
from peft import LoraConfig, get_peft_model
torch.manual_seed(0)
m = get_peft_model(AutoModelForCausalLM.from_pretrained(sys.argv[1]), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False))
m.save_pretrained(sys.argv[2])
`
	if out, err := exec.Command(python, "-c", mk, model, adapter).CombinedOutput(); err != nil {
		t.Fatalf("make adapter: %v\n%s", err, out)
	}
	return adapter
}

// TestContractVLLM runs the suite, LoRA load/unload lifecycle included,
// against a real vLLM (CPU build) serving the tiny model: the shared server
// `make test` starts (PARLEY_VLLM_URL), so that the simulator and vLLM are
// held to one contract.
func TestContractVLLM(t *testing.T) {
	srv := vllmtest.Shared(t)
	python, model := vllmtest.Python(t)
	contract.Run(t, contract.Config{BaseURL: srv.URL, Model: srv.Model, LoRAPath: makeAdapter(t, python, model)})
}
