"""Quantize a GGUF with llama.cpp's own ``llama_model_quantize`` (through llama-cpp-python).

    python -m localqwen.training.gguf_quantize IN.gguf OUT.gguf Q4_K_M [--threads N]

runs it in a child process (``gguf_export`` does this: llama.cpp aborts the whole process on some
errors, and a cancel has to be able to stop it) and prints a ``Progress`` event (one JSON line) per
tensor done, read from llama.cpp's own log, so the parent relays real progress.
"""

from __future__ import annotations

import argparse
import re
import sys

# llama.cpp logs "[  12/ 291]   blk.1.attn_q.weight - ..." as it quantizes each tensor.
_TENSOR_LINE = re.compile(r"^\[\s*(\d+)/\s*(\d+)\]")
_PREFIX = "LLAMA_FTYPE_MOSTLY_"
# llama.cpp refuses these without an importance matrix (computed from sample text), which this export
# does not make: better said before converting than after.
NEEDS_IMATRIX = frozenset({"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "Q2_K_S"})


def quant_types() -> dict[str, int]:
    """Every type name llama.cpp can quantize to ("Q4_K_M", "Q8_0", "F16", ...) -> its llama_ftype."""
    import llama_cpp

    return {name.removeprefix(_PREFIX): getattr(llama_cpp, name) for name in dir(llama_cpp)
            if name.startswith(_PREFIX) and isinstance(getattr(llama_cpp, name), int)}


def normalize_quant(name: str) -> str:
    """'q4_k_m' -> 'Q4_K_M'; a clear error naming the choices for an unknown type."""
    types = quant_types()
    key = name.strip().upper()
    if key not in types:
        raise ValueError(f"unknown GGUF quantization {name!r}; llama.cpp offers: "
                         f"{', '.join(sorted(set(types) - NEEDS_IMATRIX))}")
    if key in NEEDS_IMATRIX:
        raise ValueError(f"{key} needs an importance matrix (llama.cpp's llama-imatrix), which this export does "
                         "not compute; pick Q2_K, Q3_K_M, Q4_K_M or larger")
    return key


def quantize(source: str, target: str, quant: str, *, threads: int = 0) -> None:
    """Write ``target``, ``source`` (an f16/bf16/f32 GGUF) quantized to ``quant``; prints progress lines."""
    import ctypes

    import llama_cpp

    from localqwen.vocabulary import events as ev

    key = normalize_quant(quant)
    ftype = quant_types()[key]
    pending = {"text": ""}

    @llama_cpp.llama_log_callback
    def on_log(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        pending["text"] += text.decode("utf-8", errors="replace")
        *lines, pending["text"] = pending["text"].split("\n")
        for line in lines:
            match = _TENSOR_LINE.match(line.strip())
            if match:
                event = ev.Progress(done=int(match[1]), total=int(match[2]), unit="tensor", task=f"quantize {key}",
                                    message=f"quantizing to {key}")
                print(event.to_json(), flush=True)

    llama_cpp.llama_log_set(on_log, ctypes.c_void_p(0))
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = threads
    status = llama_cpp.llama_model_quantize(source.encode(), target.encode(), ctypes.byref(params))
    if status != 0:
        raise SystemExit(f"llama_model_quantize failed (status {status}) for {source} -> {quant}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="python -m localqwen.training.gguf_quantize")
    parser.add_argument("source")
    parser.add_argument("target")
    parser.add_argument("quant")
    parser.add_argument("--threads", type=int, default=0, help="0 = llama.cpp's default (all cores)")
    args = parser.parse_args(argv)
    quantize(args.source, args.target, args.quant, threads=args.threads)


if __name__ == "__main__":
    main(sys.argv[1:])
