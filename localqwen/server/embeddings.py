"""``POST /v1/embeddings`` with the retrieval embedder, loaded once through the device manager.

Vectors are L2-normalised float32, as ``float`` lists or, when asked (the official client asks by
default), ``base64`` of their little-endian bytes. Token arrays as input are refused: the client
would have tokenised for a different model.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

from localqwen.server.errors import ApiError

if TYPE_CHECKING:
    from localqwen.app import Workbench

MAX_INPUTS = 2048


def embedding_inputs(body: dict[str, Any]) -> list[str]:
    value = body.get("input")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise ApiError(400, "'input' must be a string or a non-empty list of strings (token arrays are not taken)",
                       param="input")
    if len(texts) > MAX_INPUTS:
        raise ApiError(400, f"at most {MAX_INPUTS} inputs per request, got {len(texts)}", param="input")
    if body.get("encoding_format", "float") not in ("float", "base64"):
        raise ApiError(400, "'encoding_format' must be 'float' or 'base64'", param="encoding_format")
    if body.get("dimensions") is not None:
        raise ApiError(400, "this embedder has a fixed size; leave 'dimensions' out", param="dimensions")
    return texts


def embed(bench: Workbench, model: str, texts: list[str], encoding: str) -> dict[str, Any]:
    """The embeddings response (blocking: call it from a worker thread)."""
    from localqwen.retrieval.embeddings import get_embedder

    embedder = get_embedder(model, manager=bench.services.device)
    vectors = embedder.encode(texts)
    tokens = sum(len(ids) for ids in embedder.tokenizer(texts, add_special_tokens=True)["input_ids"])
    data = []
    for index, vector in enumerate(vectors):
        value: Any = (base64.b64encode(vector.astype("<f4").tobytes()).decode("ascii") if encoding == "base64"
                      else [float(x) for x in vector])
        data.append({"object": "embedding", "index": index, "embedding": value})
    return {"object": "list", "data": data, "model": model,
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
