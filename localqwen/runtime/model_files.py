"""Check model files before loading: safetensors only, complete files, a config present.

Each problem gets its own error so the user knows exactly what to fix.
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterable
from pathlib import Path

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl")
GGUF_MAGIC = b"GGUF"


class ModelFileError(ValueError):
    """A model folder or file that cannot be used safely or at all."""


class PickleCheckpointError(ModelFileError):
    pass


class TruncatedFileError(ModelFileError):
    pass


class MissingConfigError(ModelFileError):
    pass


class RemoteCodeRefusedError(ModelFileError):
    """A load asked for ``trust_remote_code`` for a model the user did not list as trusted."""


# A hub id ("Qwen/Qwen3-0.6B", "org/name"): anything else that does not exist is a missing local path.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.\-]*/[\w.\-]+$")


def check_model_source(ref: str | os.PathLike[str], *, trust_remote_code: bool = False,
                       trusted: Iterable[str] | None = None) -> None:
    """The one gate every model load passes (engine, trainer, evaluation, merge, export, wizard).

    A local folder must hold safetensors weights (never pickle; see :func:`check_model_folder`), a
    ``.gguf`` file must have a sane header (:func:`check_gguf`); a hub id is fetched later with
    safetensors only. ``trust_remote_code`` (running the model folder's own Python) is refused unless
    the model is listed in the user's ``runtime.trust_remote_code``: a job file or a form cannot
    turn it on by itself. ``trusted`` defaults to that list, read from the user's config file.
    """
    text = str(ref)
    path = Path(text).expanduser()
    if path.exists():
        if path.is_file() and path.suffix.lower() == ".gguf":
            check_gguf(path)
        else:
            check_model_folder(path)
    elif not _HUB_ID.match(text):
        raise ModelFileError(f"model not found: {text} is neither a local folder nor a hub id like 'Qwen/Qwen3-0.6B'")
    if trust_remote_code:
        check_remote_code(text, trusted)


def check_remote_code(ref: str, trusted: Iterable[str] | None = None) -> None:
    """Raise :class:`RemoteCodeRefusedError` unless the user trusts ``ref`` to run its own code."""
    allowed = list(trusted) if trusted is not None else user_trusted_models()
    if not remote_code_allowed(ref, allowed):
        raise RemoteCodeRefusedError(
            f"{ref} asks to run its own Python code (trust_remote_code = true), which LocalQwen refuses "
            "unless you list the model in your config: add its id or folder to runtime.trust_remote_code "
            "only if you trust its author")


def remote_code_allowed(ref: str, trusted: Iterable[str]) -> bool:
    """True when ``ref`` (a hub id or a folder) is in ``trusted``; a folder matches by its path or
    its name (the id a local model gets), a catalog model by its id or hub repo."""
    from localqwen.runtime import catalog

    allowed = {name.strip().lower() for name in trusted if name.strip()}
    if not allowed:
        return False
    names = {ref.lower()}
    path = Path(ref).expanduser()
    if path.exists():
        resolved = path.resolve()
        names |= {str(resolved).lower(), resolved.name.lower()}
        allowed |= {str(Path(name).expanduser().resolve()).lower() for name in allowed if "/" in name or "\\" in name}
    entry = catalog.find(ref)
    if entry is not None:
        names |= {entry.id.lower(), entry.hf_repo.lower()}
    return bool(allowed & names)


def user_trusted_models() -> list[str]:
    """The user's ``runtime.trust_remote_code`` list (empty when the config file is missing or broken:
    a config that cannot be read trusts nobody)."""
    from localqwen.config import load_config
    from localqwen.paths import app_paths

    config, _error = load_config(app_paths().config_file)
    return list(config.runtime.trust_remote_code)


def check_model_folder(path: Path) -> None:
    """Raise a specific :class:`ModelFileError` unless ``path`` is a loadable safetensors model."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"model folder not found: {path}")
    if not path.is_dir():
        raise ModelFileError(f"{path} is a file; a transformers model is a folder (or give a .gguf file)")
    if not (path / "config.json").is_file():
        raise MissingConfigError(
            f"{path} has no config.json, so it is not a Hugging Face model folder "
            "(download the full model, or point at the folder that contains config.json)"
        )
    weights = sorted(path.glob("*.safetensors"))
    if not weights:
        pickles = [p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES]
        if pickles:
            raise PickleCheckpointError(
                f"{path} holds only pickle weights ({', '.join(pickles[:3])}); pickle files can run "
                "arbitrary code, so LocalQwen loads safetensors only. Convert them with "
                "`transformers` (save_pretrained(safe_serialization=True)) on a trusted machine."
            )
        raise ModelFileError(f"{path} has config.json but no *.safetensors weights")
    for weight in weights:
        check_safetensors(weight)


def check_no_pickle_only(path: Path) -> None:
    """For model folders of other layouts (sentence-transformers embedders and cross-encoders keep
    weights in sub-folders): refuse one whose only weights are pickle files."""
    path = Path(path)
    if not path.is_dir():
        return
    if any(path.rglob("*.safetensors")):
        return
    pickles = sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise PickleCheckpointError(
            f"{path} holds only pickle weights ({', '.join(pickles[:3])}); pickle files can run arbitrary "
            "code, so LocalQwen loads safetensors only. Convert them on a trusted machine.")


def check_safetensors(path: Path) -> None:
    """Verify the header parses and the file is as long as the header says (catches truncation)."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        raw = handle.read(8)
        if len(raw) < 8:
            raise TruncatedFileError(f"{path} is truncated ({size} bytes): re-download it")
        (header_size,) = struct.unpack("<Q", raw)
        if header_size > size - 8 or header_size > 100 * 1024 * 1024:
            raise TruncatedFileError(f"{path} is truncated or not a safetensors file: re-download it")
        try:
            header = json.loads(handle.read(header_size))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise TruncatedFileError(f"{path} has a damaged header ({exc}): re-download it") from exc
    end = max((entry["data_offsets"][1] for key, entry in header.items() if key != "__metadata__"), default=0)
    expected = 8 + header_size + end
    if size < expected:
        raise TruncatedFileError(
            f"{path} is truncated: {size} of {expected} bytes ({size / expected:.0%}); re-download it "
            "(`localqwen models download` resumes)"
        )


# Files that passed check_gguf, by (path, size, modification time): a changed file is checked again.
_GGUF_CHECKED: set[tuple[str, int, int]] = set()


class GGUFHeaderError(ModelFileError):
    """A GGUF header with impossible values (a crafted or corrupt file), refused before llama.cpp reads it."""


def check_gguf(path: Path) -> None:
    """Verify the GGUF magic and header, and that the tensor data the header describes is all there.

    Every count, length and dimension is checked against the file size before anything is read or
    allocated for it, so a crafted 100-byte header claiming 4 billion dimensions or a 2**60-byte
    string is refused in milliseconds instead of reaching llama.cpp (which tried to allocate 8 GB).
    """
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"GGUF file not found: {path}")
    with path.open("rb") as handle:
        if handle.read(4) != GGUF_MAGIC:
            raise ModelFileError(f"{path} is not a GGUF file (bad magic bytes)")
    stat = path.stat()
    size = stat.st_size
    key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
    if key in _GGUF_CHECKED:  # asked on every request for a loaded model; the header walk costs ~0.3 s
        return
    try:
        end = _gguf_data_end(path)
    except _HeaderPastEnd as exc:
        raise TruncatedFileError(f"{path} is truncated or damaged ({exc}); re-download it") from exc
    except (_BadHeader, UnicodeDecodeError) as exc:
        raise GGUFHeaderError(f"{path} is not a valid GGUF file: {exc}") from exc
    if size < end:
        raise TruncatedFileError(f"{path} is truncated: {size} of {end} bytes ({size / end:.0%}); re-download it")
    _GGUF_CHECKED.add(key)  # only files that passed: a truncated one is checked again (it may be re-downloaded)


class _BadHeader(ValueError):
    pass


class _HeaderPastEnd(ValueError):
    pass


# GGUF value types -> struct format (fixed-size ones); 8 = string, 9 = array.
_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
# ggml tensor types: (block size in elements, bytes per block), for sizing the data section.
_GGML_BLOCKS = {
    0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34), 9: (32, 36),
    10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210), 15: (256, 292),
    16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18), 21: (256, 110),
    22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2),
    34: (256, 54), 35: (256, 66), 39: (32, 17),
}
# llama.cpp's own limits (ggml.h GGML_MAX_DIMS, GGML_MAX_NAME; gguf.cpp's key length cap).
_MAX_DIMS = 4
_MAX_TENSOR_NAME = 64
_MAX_KEY = 65535
_MAX_ARRAY_NESTING = 2  # the format nests arrays once at most in practice; deeper is a crafted file
_GGML_TYPE_LIMIT = 256  # type ids beyond any ggml release


def _gguf_data_end(path: Path) -> int:
    """Byte offset where the last tensor's data ends, computed from a header checked as it is read."""
    size = path.stat().st_size
    with path.open("rb") as handle:
        def remaining() -> int:
            return size - handle.tell()

        def read(fmt: str, what: str):
            length = struct.calcsize("<" + fmt)
            if length > remaining():
                raise _HeaderPastEnd(f"the header is cut short in {what}")
            return struct.unpack("<" + fmt, handle.read(length))

        def read_string(what: str, limit: int | None = None) -> str:
            (length,) = read("Q", what)
            if limit is not None and length > limit:
                raise _BadHeader(f"{what} is {length} bytes long (at most {limit})")
            if length > remaining():
                raise _HeaderPastEnd(f"{what} claims {length} bytes but only {remaining()} are left in the file")
            return handle.read(length).decode("utf-8")

        def skip_value(kind: int, what: str, depth: int = 0) -> None:
            if kind in _GGUF_SCALARS:
                read(_GGUF_SCALARS[kind], what)
            elif kind == 8:
                read_string(what)
            elif kind == 9:
                if depth >= _MAX_ARRAY_NESTING:
                    raise _BadHeader(f"{what} nests arrays {depth + 1} deep")
                (item_kind,) = read("I", what)
                (count,) = read("Q", what)
                # Each item takes at least its fixed size (a string at least its 8-byte length).
                least = struct.calcsize("<" + _GGUF_SCALARS[item_kind]) if item_kind in _GGUF_SCALARS else 8
                if item_kind not in _GGUF_SCALARS and item_kind not in (8, 9):
                    raise _BadHeader(f"{what} is an array of unknown value type {item_kind}")
                if count * least > remaining():
                    raise _HeaderPastEnd(f"{what} claims {count} items, more than the {remaining()} bytes left hold")
                if item_kind in _GGUF_SCALARS:
                    handle.seek(count * least, 1)
                else:
                    for _ in range(count):
                        skip_value(item_kind, what, depth + 1)
            else:
                raise _BadHeader(f"{what} has unknown value type {kind}")

        handle.seek(4)
        (version,) = read("I", "the version")
        if version not in (2, 3):
            raise _BadHeader(f"GGUF version {version} (LocalQwen reads versions 2 and 3)")
        n_tensors, n_kv = read("QQ", "the counts")
        # Smallest possible entries: a key/value is an 8-byte key length + 4-byte type + 1-byte value;
        # a tensor record is an 8-byte name length + 4-byte n_dims + 4-byte type + 8-byte offset.
        if n_kv * 13 + n_tensors * 24 > remaining():
            raise _HeaderPastEnd(f"the header claims {n_kv} metadata entries and {n_tensors} tensors, "
                                 f"more than a {size}-byte file can hold")
        alignment = 32
        for index in range(n_kv):
            key = read_string(f"metadata key {index}", _MAX_KEY)
            (kind,) = read("I", f"metadata '{key}'")
            if key == "general.alignment" and kind == 4:
                (alignment,) = read("I", "general.alignment")
                if alignment == 0 or alignment & (alignment - 1):
                    raise _BadHeader(f"general.alignment is {alignment} (must be a power of two)")
            else:
                skip_value(kind, f"metadata '{key}'")
        end = 0
        for index in range(n_tensors):
            name = read_string(f"the name of tensor {index}", _MAX_TENSOR_NAME)
            (n_dims,) = read("I", f"tensor '{name}'")
            if not 1 <= n_dims <= _MAX_DIMS:
                raise _BadHeader(f"tensor '{name}' claims {n_dims} dimensions (ggml allows 1 to {_MAX_DIMS})")
            dims = read("Q" * n_dims, f"tensor '{name}'")
            ggml_type, offset = read("IQ", f"tensor '{name}'")
            if ggml_type >= _GGML_TYPE_LIMIT:
                raise _BadHeader(f"tensor '{name}' has unknown ggml type {ggml_type}")
            if offset % alignment:
                raise _BadHeader(f"tensor '{name}' starts at offset {offset}, not a multiple of {alignment}")
            elements = 1
            for dim in dims:
                if dim == 0:
                    raise _BadHeader(f"tensor '{name}' has a zero dimension {list(dims)}")
                elements *= dim
            block, block_bytes = _GGML_BLOCKS.get(ggml_type, (1, 0))
            if dims[0] % block:
                raise _BadHeader(f"tensor '{name}' has {dims[0]} columns, not a multiple of its type's "
                                 f"block of {block}")
            end = max(end, offset + elements // block * block_bytes)  # Python ints: no overflow to hide a lie
        data_start = handle.tell()
        data_start += (-data_start) % alignment
        return data_start + end
