"""Measure real peak memory of a few CPU training steps, to check the estimate against.

Run as ``python -m localqwen.training.memory_probe MODEL_DIR METHOD BATCH SEQ``; prints one JSON
line: baseline RSS (after imports, before the model loads), peak RSS, and our estimate.
"""

from __future__ import annotations

import json
import sys
import threading
import time


def main(argv: list[str]) -> None:
    import psutil
    import torch
    from transformers import AutoModelForCausalLM

    from localqwen.training.estimate import estimate_memory, model_shape
    from localqwen.training.methods import apply_method

    model_dir, method, batch, seq = argv[0], argv[1], int(argv[2]), int(argv[3])
    process = psutil.Process()
    baseline = process.memory_info().rss
    peak = [baseline]
    running = [True]

    def sample() -> None:
        while running[0]:
            peak[0] = max(peak[0], process.memory_info().rss)
            time.sleep(0.005)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    model = apply_method(model, method, {"r": 8}).model
    model.train()
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    vocab = model.config.vocab_size
    for _ in range(3):
        ids = torch.randint(0, vocab, (batch, seq))
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    running[0] = False
    sampler.join()
    estimate = estimate_memory(model_shape(model_dir), method=method, precision="fp32", batch_size=batch,
                               seq_len=seq, gradient_checkpointing=False, device="cpu")
    gib = 1024**3
    print(json.dumps({"measured_gb": (peak[0] - baseline) / gib, "estimate_gb": estimate.total_gb - estimate.overhead_gb,
                      "weights_gb": estimate.weights_gb, "activations_gb": estimate.activations_gb + estimate.logits_gb}))


if __name__ == "__main__":
    main(sys.argv[1:])
