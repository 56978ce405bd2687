"""Knowledge bases end to end with the real embedding model, LanceDB and SQLite: CRUD, batches
with bad files, replace/remove, rebuild, cancel, a killed writer, and the cross-encoder rerank."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from rag_helpers import STATINS_MD, docs_folder, kb_manager, write_encrypted_pdf

from localqwen.plugin_api import CancelToken, events
from localqwen.retrieval.knowledge_base import KnowledgeBaseError, KnowledgeBaseManager

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def manager(tmp_path):
    return kb_manager(allowed_roots=[tmp_path])


def test_create_list_rename_delete(manager):
    kb = manager.create("papers")
    assert [i.name for i in manager.list()] == ["papers"]
    with pytest.raises(KnowledgeBaseError, match="already exists"):
        manager.create("papers")
    with pytest.raises(KnowledgeBaseError, match="invalid knowledge base name"):
        manager.create("../escape")
    renamed = manager.rename("papers", "articles")
    assert renamed.id == kb.id and [i.name for i in manager.list()] == ["articles"]
    folder = manager.folder(kb.id)
    renamed.search("anything")  # creates the LanceDB table
    assert folder.exists()
    manager.delete("articles")
    assert manager.list() == [] and not folder.exists()
    orphan = manager.folder("deadbeef0000")  # as left by a delete that died half-way
    orphan.mkdir(parents=True)
    KnowledgeBaseManager(manager.database, manager.root, device=manager.device)
    assert not orphan.exists()
    with pytest.raises(KnowledgeBaseError, match="no knowledge base named 'articles'"):
        manager.get("articles")


def test_batch_with_bad_files_ingests_the_rest(manager, tmp_path):
    folder = docs_folder(tmp_path)
    (folder / "empty.txt").write_bytes(b"")
    (folder / "binary.txt").write_bytes(bytes(range(256)) * 50)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.7\nnot really a pdf")
    write_encrypted_pdf(folder / "locked.pdf", "classified")
    with open(folder / "huge.md", "wb") as handle:
        handle.truncate(500 * 1024 * 1024)  # sparse
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("secret outside the allowed roots", encoding="utf-8")

    kb = manager.create("docs")
    collected = list(kb.add_paths([folder, outside, tmp_path / "missing.txt"]))
    errors = {Path(e.field).name: e.message for e in collected if isinstance(e, events.Error)}
    assert set(errors) == {"empty.txt", "binary.txt", "broken.pdf", "locked.pdf", "huge.md",
                           outside.name, "missing.txt"}
    assert "0 bytes" in errors["empty.txt"] and "binary" in errors["binary.txt"]
    assert "malformed PDF" in errors["broken.pdf"] and "password" in errors["locked.pdf"]
    assert "over the 100 MB limit" in errors["huge.md"] and "outside the allowed folders" in errors[outside.name]
    assert any(isinstance(e, events.Progress) for e in collected)
    done = collected[-1]
    assert isinstance(done, events.Done) and done.status == "ok"
    assert sorted(Path(p).name for p in done.result["added"]) == ["aspirin.pdf", "statins.md", "vitamin.txt"]
    outside.unlink()

    hits = kb.search("which drug prevents blood clots", k=3)
    assert hits[0].source.endswith("aspirin.pdf") and hits[0].page == 2
    statin = kb.search("muscle pain side effect", k=1)[0]
    assert statin.heading == "Statins > Side effects" and statin.page is None
    assert "Side effects" in statin.citation()


def test_replace_remove_unchanged_and_rebuild(manager, tmp_path):
    folder = docs_folder(tmp_path)
    kb = manager.create("docs")
    kb.ingest([folder])
    before = {f.path: f for f in kb.files()}
    assert kb.ingest([folder]).result["skipped"] == sorted(before)  # unchanged files are skipped

    statins = folder / "statins.md"
    statins.write_text(STATINS_MD.replace("Muscle pain (myalgia)", "Liver enzyme elevation"), encoding="utf-8")
    result = kb.ingest([statins]).result
    assert result["added"] == [str(statins.resolve())]
    texts = " ".join(h.text for h in kb.search("side effect of statins", k=10))
    assert "Liver enzyme" in texts and "myalgia" not in texts
    assert kb.files()[1].sha256 != before[str(statins.resolve())].sha256

    removed = kb.remove_paths([folder / "vitamin.txt"])
    assert removed == [str((folder / "vitamin.txt").resolve())]
    assert all("vitamin" not in h.source for h in kb.search("vitamin D calcium", k=10))
    chunks_before = sorted(h.chunk_id for h in kb.search("statins aspirin", k=50))

    list(kb.rebuild())  # a fresh table from the recorded sources, switched in one transaction
    assert kb.info.table_name == "chunks_1"
    assert sorted(h.chunk_id for h in kb.search("statins aspirin", k=50)) == chunks_before
    info = manager.list()[0]
    assert info.files == 2 and info.table_name == "chunks_1"


def test_cancel_leaves_index_unchanged(manager, tmp_path):
    folder = docs_folder(tmp_path)
    kb = manager.create("docs")
    kb.ingest([folder / "vitamin.txt"])
    version = manager.list()[0].table_version
    cancel = CancelToken()
    seen = []
    for event in kb.add_paths([folder], cancel):
        seen.append(event)
        if isinstance(event, events.Progress):
            cancel.cancel()
    assert seen[-1].status == "cancelled" and "unchanged" in seen[-1].summary
    assert [Path(f.path).name for f in kb.files()] == ["vitamin.txt"]
    assert manager.list()[0].table_version == version


KILL_SCRIPT = textwrap.dedent("""
    import os, signal, sys, time
    from localqwen.app import Workbench
    from localqwen.retrieval.knowledge_base import KnowledgeBase, KnowledgeBaseManager
    moment, name, folder = sys.argv[1:4]
    services = Workbench.create().services  # as rag_helpers.kb_manager builds it (not importable here)
    kb = KnowledgeBaseManager(services.database, services.paths.data_dir / "retrieval", device=services.device).get(name)
    if moment == "after-lance-commit":
        # Die at the worst moment: LanceDB has the new rows, SQLite does not know yet.
        def die(self, version, conn=None):
            print("lance committed", version, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        KnowledgeBase._record = die
    for event in kb.add_paths([folder]):
        if moment == "while-embedding" and type(event).__name__ == "Progress" and event.task == "embed":
            print("embedding started", flush=True)
            time.sleep(120)  # the test kills us here
""")
MARKERS = {"while-embedding": "embedding started", "after-lance-commit": "lance committed"}


@pytest.mark.slow  # two subprocesses each import torch and load the embedding model
def test_killed_writer_leaves_last_good_index(manager, tmp_path):
    """SIGKILL a writer while it embeds, and another right after its LanceDB commit (both at once:
    two knowledge bases, two subprocesses); each index must still show only its last good batch."""
    folder = docs_folder(tmp_path)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    processes, good_versions = {}, {}
    for moment in MARKERS:
        kb = manager.create(moment)
        kb.ingest([folder / "vitamin.txt"])
        good_versions[moment] = manager.get(moment).info.table_version
        processes[moment] = subprocess.Popen([sys.executable, "-c", KILL_SCRIPT, moment, moment, str(folder)], env=env,
                                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for moment, process in processes.items():
        for line in process.stdout:
            if MARKERS[moment] in line:
                break
        if moment == "while-embedding":
            process.send_signal(signal.SIGKILL)
        process.wait(timeout=120)
        assert process.returncode == -signal.SIGKILL, process.stderr.read()

    fresh = kb_manager()
    for moment in MARKERS:
        reopened = fresh.get(moment)
        assert {Path(h.source).name for h in reopened.search("aspirin statins vitamin", k=20)} == {"vitamin.txt"}
        assert [Path(f.path).name for f in reopened.files()] == ["vitamin.txt"]
        if moment == "after-lance-commit":  # LanceDB had moved on; it was restored to the recorded content
            assert fresh.get(moment).info.table_version > good_versions[moment]
        # and the knowledge base keeps working normally afterwards
        assert reopened.ingest([folder]).result["chunks"] > 0
        assert {Path(h.source).name for h in reopened.search("aspirin statins vitamin", k=20)} == {
            "vitamin.txt", "statins.md", "aspirin.pdf"}


def build_tiny_cross_encoder(path: Path, words: list[str]) -> Path:
    """A tiny random BERT cross-encoder with a local WordPiece vocabulary (no hub)."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words))]
    (path / "vocab.txt").write_text("\n".join(vocab), encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(path / "vocab.txt"))
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, num_labels=1)
    BertForSequenceClassification(config).save_pretrained(path, safe_serialization=True)
    tokenizer.save_pretrained(path)
    return path


def test_rerank_with_a_tiny_cross_encoder(manager, tmp_path):
    import re

    from sentence_transformers import CrossEncoder

    folder = docs_folder(tmp_path)
    kb = manager.create("docs")
    kb.ingest([folder])
    words = re.findall(r"\w+", " ".join(p.read_text(errors="ignore") for p in folder.glob("*.*")).lower())
    model_dir = build_tiny_cross_encoder(tmp_path / "tiny-ce", words + ["what", "helps", "absorb", "calcium"])
    query = "what helps absorb calcium"
    plain = kb.search(query, k=5)
    with pytest.raises(KnowledgeBaseError, match="no cross-encoder was given"):
        kb.search(query, rerank=True)
    reranked = kb.search(query, k=5, rerank=str(model_dir))
    assert {h.chunk_id for h in reranked} <= {h.chunk_id for h in kb.search(query, k=30)}
    assert all("rerank" in h.scores for h in reranked) and all("rerank" not in h.scores for h in plain)
    # the order is exactly the cross-encoder's own order of the candidates
    independent = CrossEncoder(str(model_dir)).predict([(query, h.text) for h in reranked])
    assert list(independent) == sorted(independent, reverse=True)
    assert [h.score for h in reranked] == pytest.approx([float(x) for x in independent], abs=1e-5)
