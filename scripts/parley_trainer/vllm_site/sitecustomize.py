# Loaded by every Python process of a vLLM server that
# parley_trainer.serve_vllm starts (PYTHONPATH): the API server and its
# engine processes, forked or spawned. See parley_trainer.vllm_lora_fix.
try:
    from parley_trainer import vllm_lora_fix

    vllm_lora_fix.install()
except Exception:  # noqa: BLE001 (never keep the server from starting)
    pass
