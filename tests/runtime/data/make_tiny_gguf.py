"""How the GGUF files in tests/runtime/data/ were made (run by hand; not part of the tests).

llama.cpp's own converter, from the llama-cpp-python 0.3.36 source distribution
(`pip download --no-deps --no-binary :all: llama-cpp-python==0.3.36`, unpack), run on
`localqwen dev tiny-model OUT --vision`:

    python make_tiny_gguf.py LLAMA_CPP_DIR OUT --outfile tiny-qwen3vl-f32.gguf --outtype f32
    python make_tiny_gguf.py LLAMA_CPP_DIR OUT --mmproj --outfile mmproj-tiny-qwen3vl-f32.gguf --outtype f32

and tiny-qwen3-toolcall-f32.gguf from `build_tiny_qwen3` then `teach_reply` (the question, tool and
tool call in tests/runtime/test_runtime_tool_calling.py), converted the same way without --mmproj.

Two patches, both about our locally trained tokenizer: it uses Qwen2's pre-tokenizer pipeline but
its own vocabulary, so the converter's vocabulary-hash lookup cannot recognise it (we say
"qwen2"), and it has no SentencePiece model (byte-level BPE only).
"""

import runpy
import sys
from pathlib import Path

llama_cpp_dir = Path(sys.argv.pop(1))
sys.path.insert(0, str(llama_cpp_dir))
sys.path.insert(1, str(llama_cpp_dir / "gguf-py"))

import conversion.base as base  # noqa: E402

base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen2"


def _no_sentencepiece(self):
    raise FileNotFoundError("byte-level BPE only")


base.TextModel._set_vocab_sentencepiece = _no_sentencepiece
sys.argv[0] = "convert_hf_to_gguf.py"
runpy.run_path(str(llama_cpp_dir / "convert_hf_to_gguf.py"), run_name="__main__")
