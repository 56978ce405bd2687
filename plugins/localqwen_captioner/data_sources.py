"""The captioner's trainer data source: COCO captions -> Qwen3-VL conversation JSON.

Registered through the plugin's ``register`` hook (see :func:`register`), so the training wizard
and job configs (``[data.source] name = "coco-captions"``, even from a bare ``localqwen train``)
can build it. The synthetic coloured-shapes generator is LocalQwen's own, ``synthetic-shapes``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localqwen.plugin_api import Extensions

COCO_SOURCE = "coco-captions"


def build_coco_captions(out_dir: Path, *, csv: str | Path | None = None, rows: int = 500, split: str = "train",
                        top_k: int | None = None, test_size: float = 0.1, prompt: str | None = None,
                        seed: int = 42) -> Path:
    """Write ``captions_train.json`` (+ ``captions_test.json``) into ``out_dir``; returns the train file.

    From ``csv`` (columns image_path, caption) when given, else after downloading ``rows`` rows of
    ``modelscope/coco_2014_caption`` into ``out_dir`` (needs the network and the modelscope extra).
    """
    from localqwen_captioner.coco import COCO_PROMPT, csv_to_conversations, download_coco

    out_dir = Path(out_dir)
    if csv is None:
        for _event in download_coco(out_dir, rows, split=split):
            pass
        csv = out_dir / "captions.csv"
    result = csv_to_conversations(Path(csv), out_dir, top_k=top_k, test_size=test_size,
                                  prompt=prompt or COCO_PROMPT, seed=seed)
    return result.train_path


def register(extensions: Extensions) -> None:
    """The trainer's side of the captioner: the COCO data source and the caption metric."""
    from localqwen_captioner.metrics import caption_metric

    extensions.add_data_source(COCO_SOURCE, "COCO 2014 captions (ModelScope or a caption CSV)", build_coco_captions)
    extensions.add_metric("caption", caption_metric)  # BLEU-4 / ROUGE-L / CIDEr in the wizard's evaluate step
