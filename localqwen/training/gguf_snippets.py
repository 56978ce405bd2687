"""What a GGUF export writes beside its files so other tools run them: an Ollama Modelfile and a
README with the LM Studio, llama.cpp server and LocalQwen steps.

The Modelfile spells out Qwen's ChatML template instead of relying on Ollama recognising the one
inside the GGUF: a fine-tuned tokenizer's template is not always one Ollama knows, and without a
template Ollama sends the bare text, which a chat model answers badly.
"""

from __future__ import annotations

from pathlib import Path

from localqwen.atomic import atomic_write_text

CHATML_TEMPLATE = (
    '{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}<|im_start|>assistant\n'
)


def modelfile_text(name: str, model: Path, mmproj: Path | None) -> str:
    lines = [
        f"# Ollama: ollama create {name.lower()} -f {name}.Modelfile",
        f"#         ollama run {name.lower()}",
        "# Paths are relative to this file. Another quantization: change the FROM line.",
        f"FROM ./{model.name}",
    ]
    if mmproj is not None:
        lines += ["# The vision projector. Ollama versions that cannot take a separate projector for this",
                  "# architecture refuse it at `ollama create`: then run the model in LM Studio or llama-server.",
                  f"FROM ./{mmproj.name}"]
    lines += [
        f'TEMPLATE """{CHATML_TEMPLATE}"""',
        'PARAMETER stop "<|im_end|>"',
        'PARAMETER stop "<|endoftext|>"',
        "PARAMETER temperature 0.7",
        "PARAMETER top_p 0.8",
        "PARAMETER num_ctx 4096",
    ]
    return "\n".join(lines) + "\n"


def readme_text(name: str, models: list[Path], mmproj: Path | None) -> str:
    main = models[0]
    projector = f" --mmproj {mmproj.name}" if mmproj is not None else ""
    files = "\n".join(f"- `{m.name}` ({m.stat().st_size / 1e6:,.1f} MB)" for m in models)
    if mmproj is not None:
        files += f"\n- `{mmproj.name}`: the vision projector (images); keep it in the same folder"
    return f"""# {name}: GGUF files

{files}

Exported by LocalQwen (`localqwen models export`). Smaller files run faster and need less memory;
Q4_K_M is the usual choice for a laptop, Q8_0 is nearly lossless, F16 is the unquantized reference.

## LocalQwen

Use the `.gguf` path wherever a model is asked for (the projector beside it is found by its
name), e.g. in the config:

```toml
[plugins.chat]
model = "{main.resolve()}"
```

## Ollama

```bash
ollama create {name.lower()} -f {name}.Modelfile
ollama run {name.lower()}
```

## LM Studio

```bash
lms import {main.name}        # or copy this folder into ~/.lmstudio/models/local/{name}/
```

LM Studio shows every `.gguf` in the folder as a variant{"; it loads the `mmproj-` file beside the model for images" if mmproj else ""}.

## llama.cpp server (OpenAI-compatible API)

```bash
llama-server -m {main.name}{projector} --port 8080
```
"""


def write_snippets(output_dir: Path, name: str, models: list[Path], mmproj: Path | None) -> tuple[Path, Path]:
    """Write ``<name>.Modelfile`` and ``<name>-README.md``; both point at the first quantized file
    (the first of ``models`` when all are float)."""
    if not models:
        raise ValueError("no GGUF files to describe")
    floats = ("-F16", "-BF16", "-F32")
    models = sorted(models, key=lambda m: m.stem.upper().endswith(floats))  # stable: quantized first
    modelfile = output_dir / f"{name}.Modelfile"
    readme = output_dir / f"{name}-README.md"
    atomic_write_text(modelfile, modelfile_text(name, models[0], mmproj))
    atomic_write_text(readme, readme_text(name, models, mmproj))
    for path in (modelfile, readme):
        path.chmod(0o644)  # readable like the .gguf files beside them (the atomic write makes 0600)
    return modelfile, readme
