"""Merging a trained adapter into its base model: one plain safetensors model folder.

The trainer's "merge" step and the GGUF export (``gguf_export``) both come here; loads go through
the trainer's safety-checked loader (``modeling.load_model_and_processor``).
"""

from __future__ import annotations

from pathlib import Path


def merge_lora(base_path: str | Path, adapter_dir: str | Path, out_dir: str | Path) -> Path:
    """Fold the adapter into the base weights and save a plain model (safetensors) + processor.

    LoRA, DoRA and IA3 merge. A QLoRA adapter is LoRA trained against the 4-bit base; it is merged
    into the full-precision base (the usual way to ship it: the merged model is not 4-bit, and the
    difference is the NF4 rounding the adapter was trained around). MoE-LoRA / MoT-LoRA cannot be
    merged: their experts are chosen per token at run time."""
    from localqwen.adapters import get_method
    from localqwen.adapters.io import read_meta
    from localqwen.training.methods import load_trained
    from localqwen.training.modeling import load_model_and_processor

    adapter_dir = Path(adapter_dir)
    method = (read_meta(adapter_dir) or {}).get("method")
    if method is not None and get_method(method).own:
        raise RuntimeError(f"the {method} adapter in {adapter_dir} cannot be merged into plain weights: it routes "
                           "each token between expert adapters at run time")
    base, processor, _ = load_model_and_processor(base_path, precision="fp32")
    if method == "qlora":
        from peft import PeftModel

        from localqwen.adapters.io import check_peft_shapes

        check_peft_shapes(base, adapter_dir)  # the same shape check load_trained does
        model = PeftModel.from_pretrained(base, str(adapter_dir))
    else:
        model = load_trained(base, adapter_dir)
    if not hasattr(model, "merge_and_unload"):
        raise RuntimeError(f"the adapter in {adapter_dir} cannot be merged (no merge_and_unload)")
    merged = model.merge_and_unload()
    out = Path(out_dir)
    merged.save_pretrained(out, safe_serialization=True)
    processor.save_pretrained(out)
    return out
