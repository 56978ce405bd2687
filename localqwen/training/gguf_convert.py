"""Runs llama.cpp's convert_hf_to_gguf.py in its own process, with two narrow fixes.

    python -m localqwen.training.gguf_convert CONVERTER_DIR MODEL_DIR --outfile F --outtype f16 [--mmproj]

(everything after CONVERTER_DIR goes to the converter unchanged). ``gguf_export`` starts it as a
child process so a converter crash, or a cancel, never takes the app down.

The fixes, both about the tokenizer and neither changing what a stock Qwen checkpoint gets:

- The converter identifies a BPE pre-tokenizer by hashing how the tokenizer splits a test text, so
  a tokenizer with Qwen2's splitting rules but its own vocabulary (one trained on your data, or
  the tiny models in the tests) is "not recognized". When the hash is unknown and tokenizer.json
  declares exactly Qwen2's pre-tokenizer (its split regex followed by byte-level), it is "qwen2".
- Qwen2's ``set_vocab`` tries SentencePiece first and falls back to byte-level BPE when there is no
  tokenizer.model, but it imports ``sentencepiece`` before looking for the file, so without that
  (optional) package it fails instead of falling back. The file is looked for first here.
"""

from __future__ import annotations

import json
import runpy
import sys
from pathlib import Path
from typing import Any


def declares_qwen2_pretokenizer(model_dir: Path) -> bool:
    """Whether ``model_dir/tokenizer.json`` splits text exactly as Qwen2's tokenizer does."""
    from transformers.models.qwen2.tokenization_qwen2 import PRETOKENIZE_REGEX

    try:
        spec = json.loads((model_dir / "tokenizer.json").read_text(encoding="utf-8")).get("pre_tokenizer") or {}
    except (OSError, ValueError):
        return False
    steps = spec.get("pretokenizers") if spec.get("type") == "Sequence" else None
    if not steps or len(steps) != 2:
        return False
    split, byte_level = steps
    return (split.get("type") == "Split" and (split.get("pattern") or {}).get("Regex") == PRETOKENIZE_REGEX
            and split.get("behavior") == "Isolated" and not split.get("invert")
            and byte_level.get("type") == "ByteLevel" and not byte_level.get("use_regex", True))


def _patch(base: Any) -> None:
    recognise = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self: Any, tokenizer: Any) -> str:
        try:
            return recognise(self, tokenizer)
        except NotImplementedError:
            if declares_qwen2_pretokenizer(Path(self.dir_model)):
                return "qwen2"
            raise

    create_sentencepiece = base.TextModel._create_vocab_sentencepiece

    def _create_vocab_sentencepiece(self: Any) -> Any:
        tokenizer_path = Path(self.dir_model) / "tokenizer.model"
        if not tokenizer_path.is_file():
            raise FileNotFoundError(f"File not found: {tokenizer_path}")
        return create_sentencepiece(self)

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    base.TextModel._create_vocab_sentencepiece = _create_vocab_sentencepiece


def _report_writing() -> None:
    """Relay the converter's "Writing" progress bar as Progress events on stdout (one JSON line each)."""
    import tqdm as tqdm_module

    from localqwen.vocabulary import events as ev

    class ReportingTqdm(tqdm_module.tqdm):  # type: ignore[misc]
        def update(self, n: float | None = 1) -> bool | None:
            shown = super().update(n)
            if str(self.desc).startswith("Writing") and self.total:
                print(ev.Progress(done=self.n, total=self.total, unit="byte", task="convert",
                                  message="writing GGUF").to_json(), flush=True)
            return shown

    tqdm_module.tqdm = ReportingTqdm  # the writer imports it inside the function, after this


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        raise SystemExit("usage: python -m localqwen.training.gguf_convert CONVERTER_DIR MODEL_DIR [converter options]")
    converter = Path(argv[0])
    sys.path.insert(0, str(converter))
    sys.path.insert(1, str(converter / "gguf-py"))  # its own gguf-py, matching the script
    import conversion.base as base

    _patch(base)
    _report_writing()
    sys.argv = [str(converter / "convert_hf_to_gguf.py"), *argv[1:]]
    runpy.run_path(str(converter / "convert_hf_to_gguf.py"), run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
