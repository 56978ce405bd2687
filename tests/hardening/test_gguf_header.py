"""Issue 16, item 5: crafted GGUF headers are refused in milliseconds, before llama.cpp sees them.

The files are written byte by byte here, following the GGUF v3 layout (magic, version, tensor and
metadata counts, key/values, tensor records, aligned data); the well-formed one passes, so each
refusal is down to the one field the test corrupts.
"""

from __future__ import annotations

import struct
import time
import tracemalloc
from pathlib import Path

import pytest

from localqwen.runtime.model_files import GGUFHeaderError, ModelFileError, TruncatedFileError, check_gguf


def _string(text: str | bytes, length: int | None = None) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw) if length is None else length) + raw


def gguf_bytes(*, version: int = 3, n_tensors: int | None = None, n_kv: int | None = None,
               kv: list[bytes] | None = None, tensors: list[tuple[str, list[int], int, int]] | None = None,
               data: bytes | None = None, n_dims_override: int | None = None) -> bytes:
    """A GGUF file: ``kv`` are encoded key/values, ``tensors`` (name, dims, ggml type, offset)."""
    kv = kv if kv is not None else [_string("general.architecture") + struct.pack("<I", 8) + _string("llama")]
    tensors = tensors if tensors is not None else [("w", [8, 2], 0, 0)]  # 16 float32 values
    out = b"GGUF" + struct.pack("<I", version)
    out += struct.pack("<QQ", len(tensors) if n_tensors is None else n_tensors, len(kv) if n_kv is None else n_kv)
    out += b"".join(kv)
    for name, dims, ggml_type, offset in tensors:
        n_dims = len(dims) if n_dims_override is None else n_dims_override
        out += _string(name) + struct.pack("<I", n_dims) + struct.pack(f"<{len(dims)}Q", *dims)
        out += struct.pack("<IQ", ggml_type, offset)
    out += b"\0" * ((-len(out)) % 32)
    return out + (data if data is not None else b"\0" * 64)


def _refused_fast(path: Path, error: type[Exception], match: str) -> None:
    """Refused with ``error``, in well under a second, without allocating more than a few MB."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(error, match=match):
            check_gguf(path)
    finally:
        elapsed = time.perf_counter() - started
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert elapsed < 0.5, f"took {elapsed:.3f} s"
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.1f} MB"


def test_a_well_formed_header_passes(tmp_path):
    good = tmp_path / "good.gguf"
    good.write_bytes(gguf_bytes())
    check_gguf(good)


def test_the_issue_file_four_billion_dimensions_is_refused_in_milliseconds(tmp_path):
    """The reported attack: ~100 bytes whose tensor claims 0xFFFFFFFF dimensions (was 8.4 GB, 72 s)."""
    crafted = tmp_path / "crafted.gguf"
    crafted.write_bytes(gguf_bytes(kv=[], n_dims_override=0xFFFFFFFF, tensors=[("w", [8], 0, 0)], data=b""))
    assert len(crafted.read_bytes()) <= 100
    _refused_fast(crafted, GGUFHeaderError, "tensor 'w' claims 4294967295 dimensions")


CRAFTED = [
    ("counts", gguf_bytes(n_tensors=2**62), TruncatedFileError, "claims .* tensors"),
    ("kv count", gguf_bytes(n_kv=2**40), TruncatedFileError, "metadata entries"),
    ("key length", gguf_bytes(kv=[_string(b"k", length=2**60)]), GGUFHeaderError, "metadata key 0 is"),
    ("string value", gguf_bytes(kv=[_string("general.name") + struct.pack("<I", 8) + _string(b"x", 2**50)]),
     TruncatedFileError, "claims 1125899906842624 bytes"),
    ("array count", gguf_bytes(kv=[_string("tokens") + struct.pack("<IIQ", 9, 8, 2**61)]),
     TruncatedFileError, "claims 2305843009213693952 items"),
    ("value type", gguf_bytes(kv=[_string("odd") + struct.pack("<I", 77)]), GGUFHeaderError, "unknown value type 77"),
    ("nested arrays", gguf_bytes(kv=[_string("deep") + struct.pack("<IIQIQIQ", 9, 9, 1, 9, 1, 9, 1)]),
     GGUFHeaderError, "nests arrays"),
    ("tensor name", gguf_bytes(tensors=[("n" * 200, [8], 0, 0)]), GGUFHeaderError, "200 bytes long"),
    ("zero dims", gguf_bytes(tensors=[("w", [8], 0, 0)], n_dims_override=0), GGUFHeaderError, "0 dimensions"),
    ("zero dimension", gguf_bytes(tensors=[("w", [8, 0], 0, 0)]), GGUFHeaderError, "zero dimension"),
    ("huge dimensions", gguf_bytes(tensors=[("w", [2**40, 2**40], 0, 0)]), TruncatedFileError, "truncated"),
    ("ggml type", gguf_bytes(tensors=[("w", [8], 4096, 0)]), GGUFHeaderError, "unknown ggml type 4096"),
    ("unaligned offset", gguf_bytes(tensors=[("w", [8], 0, 3)]), GGUFHeaderError, "not a multiple of 32"),
    ("block size", gguf_bytes(tensors=[("w", [7], 2, 0)]), GGUFHeaderError, "not a multiple of its type's block"),
    ("alignment", gguf_bytes(kv=[_string("general.alignment") + struct.pack("<II", 4, 24)]),
     GGUFHeaderError, "power of two"),
    ("version", gguf_bytes(version=99), GGUFHeaderError, "version 99"),
    ("cut short", gguf_bytes()[:18], TruncatedFileError, "cut short in the counts"),
    ("cut in tensors", gguf_bytes()[:30], TruncatedFileError, "more than a 30-byte file can hold"),
]


@pytest.mark.parametrize(("case", "content", "error", "match"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_crafted_headers_are_refused_quickly_with_a_clear_message(tmp_path, case, content, error, match):
    crafted = tmp_path / f"{case.replace(' ', '_')}.gguf"
    crafted.write_bytes(content)
    _refused_fast(crafted, error, match)


def test_the_engine_refuses_a_crafted_gguf_before_llama_cpp(tmp_path):
    """The paths that hand a GGUF to llama.cpp: a local model and the llama.cpp engine itself."""
    from localqwen.config import Config
    from localqwen.paths import app_paths
    from localqwen.runtime.model_manager import ModelManager

    crafted = tmp_path / "crafted.gguf"
    crafted.write_bytes(gguf_bytes(kv=[], n_dims_override=0xFFFFFFFF, tensors=[("w", [8], 0, 0)], data=b""))
    with pytest.raises(ModelFileError, match="4294967295 dimensions"):
        ModelManager(app_paths(), Config()).local(crafted)
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is the optional llama.cpp backend")
    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    started = time.perf_counter()
    with pytest.raises(GGUFHeaderError):
        LlamaCppEngine(crafted)
    assert time.perf_counter() - started < 2.0
