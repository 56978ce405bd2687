"""Caption metrics: BLEU-4, ROUGE-L and CIDEr(-D), as the COCO caption evaluation computes them.

The scorers are pycocoevalcap's (pure Python). Its PTB tokenizer runs Java, so we tokenize here
the way it does: lower case, clitics split off ("dog's" -> "dog 's"), punctuation dropped.
Chinese / Japanese / Korean text is split into single characters, the usual practice for CJK
caption metrics, so a Chinese caption is not one giant "word".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

_CJK = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\s{_CJK}]+")
_CLITIC = re.compile(r"^(.+?)('s|'re|'ve|'ll|'d|'m|n't)$")
# Characters the PTB tokenizer splits off and the COCO evaluation then removes.
_PUNCTUATION = re.compile(r"""[.,!?;:"“”‘«»()\[\]{}`\-–—…/\\*#~|<>@$%^&+=_]""")


def tokenize(text: str) -> list[str]:
    """COCO-style tokens of one caption."""
    tokens: list[str] = []
    for raw in _TOKEN.findall(text.lower().replace("’", "'")):
        for piece in _PUNCTUATION.sub(" ", raw).split():
            piece = piece.strip("'")
            if not piece:
                continue
            clitic = _CLITIC.match(piece)
            tokens.extend(clitic.groups() if clitic else (piece,))
    return tokens


@dataclass(frozen=True)
class CaptionScores:
    bleu4: float
    rouge_l: float
    cider: float | None  # None for fewer than two images: CIDEr's IDF needs a corpus
    images: int

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def score_captions(references: Mapping[str, Sequence[str]], predictions: Mapping[str, str]) -> CaptionScores:
    """Corpus scores of ``predictions`` (one caption per image key) against ``references``.

    Every predicted key must have at least one reference; references without a prediction are
    ignored, so a partial run can still be scored.
    """
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    missing = [key for key in predictions if not references.get(key)]
    if missing:
        raise ValueError(f"{len(missing)} predictions have no reference caption (first: {missing[0]})")
    if not predictions:
        raise ValueError("nothing to score: no predictions")
    gts = {key: [" ".join(tokenize(ref)) for ref in references[key]] for key in predictions}
    res = {key: [" ".join(tokenize(text))] for key, text in predictions.items()}
    bleu, _ = Bleu(4).compute_score(gts, res, verbose=0)
    rouge, _ = Rouge().compute_score(gts, res)
    cider = Cider().compute_score(gts, res)[0] if len(res) > 1 else None
    return CaptionScores(bleu4=float(bleu[3]), rouge_l=float(rouge),
                         cider=None if cider is None else float(cider), images=len(res))


def caption_metric(predictions: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """The trainer's evaluate hook (``metric(predictions, references) -> {name: value}``).

    Rows are paired by position, one reference each; CIDEr is left out below two rows.
    """
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} references")
    keys = [str(index) for index in range(len(predictions))]
    scores = score_captions({k: [r] for k, r in zip(keys, references, strict=True)},
                            dict(zip(keys, predictions, strict=True)))
    values = {"bleu4": scores.bleu4, "rouge_l": scores.rouge_l}
    if scores.cider is not None:
        values["cider"] = scores.cider
    return values
