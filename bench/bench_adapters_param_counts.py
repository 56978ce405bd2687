"""Trainable parameters of each adapter method on the real Qwen3-VL-4B text decoder shapes.

No weights needed: the counts follow from the config. Qwen3-VL-4B-Instruct text_config:
hidden_size 2560, num_hidden_layers 36, num_attention_heads 32, num_key_value_heads 8,
head_dim 128, intermediate_size 9728. The seed's training log reports 5,898,240 trainable
parameters for LoRA r=8 on q/k/v/o_proj; the ratio printed is ours / that number.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from localqwen.adapters.param_counts import qwen3_text_layers, trainable_params  # noqa: E402

QWEN3_VL_4B = dict(hidden=2560, layers=36, heads=32, kv_heads=8, head_dim=128, intermediate=9728)
SEED_LORA_R8_QKVO = 5_898_240
METHODS = {
    "lora": {"r": 8},
    "qlora": {"r": 8},
    "dora": {"r": 8},
    "ia3": {},
    "moe-lora": {"r": 8, "num_experts": 4, "top_k": 2},
    "mot-lora": {"r": 8, "kernel_size": 4},
}


def main() -> dict[str, float]:
    attention = qwen3_text_layers(**QWEN3_VL_4B)
    with_mlp = qwen3_text_layers(**QWEN3_VL_4B, mlp=True)
    lora = trainable_params("lora", attention, METHODS["lora"])
    print(f"{'method':<10} {'q/k/v/o':>12} {'+ mlp':>12} {'vs LoRA':>8}")
    for method, options in METHODS.items():
        count = trainable_params(method, attention, options)
        print(f"{method:<10} {count:>12,} {trainable_params(method, with_mlp, options):>12,} {count / lora:>8.3f}")
    ratio = lora / SEED_LORA_R8_QKVO
    print(f"LoRA r=8 q/k/v/o: {lora:,} vs the seed's {SEED_LORA_R8_QKVO:,} -> ratio {ratio:.3f}")
    return {"lora_vs_seed": ratio}


if __name__ == "__main__":
    main()
