"""GGUF export: time and file size per quantization type.

    python bench/bench_export_gguf.py                 # a Qwen3-0.6B-shaped model, 4 of its 28 layers
    python bench/bench_export_gguf.py --quick         # 2 layers
    python bench/bench_export_gguf.py --model DIR     # any local Qwen3 / Qwen3-VL folder, or a LoRA run
    python bench/bench_export_gguf.py --quants F16,Q8_0,Q5_K_M,Q4_K_M

The default model has Qwen3-0.6B's layer shapes (hidden 1024, MLP 3072, 16 query / 8 KV heads of
128) with random weights and a small tokenizer, so the K-quants work on real 256-wide rows; sizes
per parameter and seconds per GB carry over to the full model (its 151k-token embedding adds
~311 MB at F16). The F16 row's time is the conversion (convert_hf_to_gguf, child process start
included); the others are llama.cpp's quantize from that F16 file.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("OMP_NUM_THREADS", "2")

QWEN3_06B_LAYER = {"hidden_size": 1024, "intermediate_size": 3072, "num_attention_heads": 16,
                   "num_key_value_heads": 8, "head_dim": 128}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", help="Model folder / adapter / run to export (default: a Qwen3-0.6B-shaped one).")
    parser.add_argument("--layers", type=int, default=4, help="Layers of the default model.")
    parser.add_argument("--quick", action="store_true", help="2 layers.")
    parser.add_argument("--quants", default="F16,Q8_0,Q5_K_M,Q4_K_M")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    from localqwen.testing.tiny_models import build_tiny_qwen3
    from localqwen.training.gguf_export import export_gguf
    from localqwen.training.llama_converter import ensure_converter

    ensure_converter()  # once, outside the timing
    with tempfile.TemporaryDirectory(prefix="bench-gguf-") as tmp:
        if args.model:
            source = Path(args.model)
        else:
            layers = 2 if args.quick else args.layers
            source = build_tiny_qwen3(Path(tmp) / "qwen3-0.6b-shaped", num_hidden_layers=layers, **QWEN3_06B_LAYER)
        params = _params(source)
        quants = [q for q in args.quants.split(",") if q.strip()]
        started = time.perf_counter()
        result = export_gguf(source, Path(tmp) / "out", quants, name="bench", threads=args.threads)
        total = time.perf_counter() - started
        print(f"model: {source.name}, {params / 1e6:.1f} M parameters; threads {args.threads}; total {total:.1f} s")
        print(f"{'type':<8} {'MB':>9} {'bits/param':>11} {'vs F16':>7} {'seconds':>8}")
        f16 = next((f.size_bytes for f in result.files if f.quant == "F16"), None)
        for item in result.files:
            ratio = f"{item.size_bytes / f16:.2f}" if f16 else "-"
            print(f"{item.quant:<8} {item.size_bytes / 1e6:>9.1f} {item.size_bytes * 8 / params:>11.2f} {ratio:>7} "
                  f"{item.seconds:>8.1f}")
        if result.mmproj is not None:
            print(f"{'mmproj':<8} {result.mmproj.stat().st_size / 1e6:>9.1f}")
    return 0


def _params(source: Path) -> int:
    from safetensors import safe_open

    folder = source / "final" if (source / "final").is_dir() else source
    total = 0
    for file in folder.glob("*.safetensors"):
        with safe_open(str(file), framework="pt") as handle:
            for key in handle.keys():  # noqa: SIM118 (safe_open is not a dict)
                shape = handle.get_slice(key).get_shape()
                count = 1
                for dim in shape:
                    count *= dim
                total += count
    return total


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
