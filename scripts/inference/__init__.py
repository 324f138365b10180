"""The CPU dev inference server's parts: sampling (logits processing and
seeded sampling, vLLM's order and logprob modes), engine (the model, LoRA
adapters, batched KV-cache generation) and api (vLLM's HTTP API subset with
its JSON shapes). The command is scripts/devserver.py."""
