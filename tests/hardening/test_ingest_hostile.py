"""Issue 16, item 3 (one hostile document aborted the whole batch) and item 6 (a file mixing UTF-8
and GBK lines stored as Big5 mojibake).

One real knowledge base (SQLite + LanceDB + the MiniLM embedder) ingests one folder in which good
files sit beside hostile ones the test builds: a compression-bomb PDF, a PDF with 200k page
references, a zip-bomb .docx, a PDF that makes the parser log ~1000 lines, and a named pipe. The
good files must go in, each bad one must be reported by name with its reason, nothing may hang.
"""

from __future__ import annotations

import time

import hostile_files as hostile
import pytest

from localqwen.plugin_api import events
from localqwen.retrieval.isolated_reader import IsolatedReader, ParseLimits
from localqwen.retrieval.loaders import DocumentError

# Tight limits so the test is quick; the defaults are 30 s + 10 s/MB and 2 GB.
LIMITS = ParseLimits(timeout_s=5.0, timeout_s_per_mb=0.0, memory_mb=1024)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Ingest the mixed folder once; every test below reads the outcome."""
    home = tmp_path_factory.mktemp("ingest_home")
    folder = tmp_path_factory.mktemp("hostile") / "docs"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\nThe good markdown file mentions lighthouses.\n", encoding="utf-8")
    hostile.good_pdf(folder / "good.pdf", "The good PDF mentions harbours.")
    hostile.good_docx(folder / "good.docx", "The good docx mentions ferries.")
    (folder / "mixed.txt").write_bytes("English line\n第一行是UTF-8\n".encode() + "中文行".encode("gbk") + b"\n")
    hostile.compression_bomb_pdf(folder / "bomb.pdf", inflated_mb=80)  # pypdf stops at 75 MB
    hostile.page_reference_flood_pdf(folder / "flood.pdf")
    hostile.zip_bomb_docx(folder / "zipbomb.docx", inflated_mb=100)
    hostile.log_spamming_pdf(folder / "spam.pdf")
    hostile.fifo(folder / "pipe.md")
    lone_pipe = hostile.fifo(folder.parent / "lone.txt")

    import os

    previous = os.environ.get("LOCALQWEN_HOME")
    os.environ["LOCALQWEN_HOME"] = str(home)
    try:
        from localqwen.app import Workbench

        kb = Workbench.create().services.retrieval.create("hostile")
        started = time.monotonic()
        collected = list(kb.add_paths([folder, lone_pipe], parse_limits=LIMITS))
        elapsed = time.monotonic() - started
        texts = list(kb.index().texts)
    finally:
        if previous is None:
            os.environ.pop("LOCALQWEN_HOME", None)
        else:
            os.environ["LOCALQWEN_HOME"] = previous
    errors = {e.field.rsplit("/", 1)[-1]: e.message for e in collected if isinstance(e, events.Error)}
    warnings = [e.message for e in collected if isinstance(e, events.Warning)]
    done = collected[-1]
    assert isinstance(done, events.Done)
    return {"errors": errors, "warnings": warnings, "done": done, "texts": texts, "elapsed": elapsed}


def test_one_bad_file_never_stops_the_batch(batch):
    added = sorted(path.rsplit("/", 1)[-1] for path in batch["done"].result["added"])
    assert added == ["good.docx", "good.md", "good.pdf", "mixed.txt", "spam.pdf"]
    assert batch["done"].status == "ok"
    joined = "\n".join(batch["texts"])
    for word in ("lighthouses", "harbours", "ferries", "spam survives"):
        assert word in joined
    assert sorted(batch["errors"]) == ["bomb.pdf", "flood.pdf", "lone.txt", "pipe.md", "zipbomb.docx"]


def test_compression_bomb_pdf_reported(batch):
    message = batch["errors"]["bomb.pdf"]
    assert message.startswith("bomb.pdf: ") and "LimitReachedError" in message


def test_page_reference_flood_pdf_reported(batch):
    # pypdf's own page-tree limit (100,000 entries) or our time limit, whichever comes first.
    message = batch["errors"]["flood.pdf"]
    assert "page tree entry limit" in message or "took longer than 5 s" in message, message
    assert batch["elapsed"] < 90  # the flood was cut off, not walked to its end


def test_parser_that_hangs_is_stopped_by_the_time_limit(tmp_path):
    """90,000 page references stay under pypdf's limit, so only the time limit stops this one; the
    next file gets a fresh worker."""
    flood = hostile.page_reference_flood_pdf(tmp_path / "pages.pdf", references=90_000)
    good = hostile.good_pdf(tmp_path / "after.pdf", "read after the timeout")
    started = time.monotonic()
    with IsolatedReader(ParseLimits(timeout_s=2.0, timeout_s_per_mb=0.0)) as reader:
        with pytest.raises(DocumentError, match="took longer than 2 s, so it was stopped"):
            reader.load(flood, max_bytes=2**30)
        assert "read after the timeout" in reader.load(good, max_bytes=2**30).blocks[0].text
    assert time.monotonic() - started < 30


def test_zip_bomb_docx_checked_after_decompression(batch):
    assert "unpacks to 100 MB, over the 64 MB limit" in batch["errors"]["zipbomb.docx"]


def test_named_pipe_skipped_with_a_clear_error(batch):
    assert "not a regular file but a named pipe (FIFO)" in batch["errors"]["pipe.md"]
    assert "named pipe" in batch["errors"]["lone.txt"]


def test_parser_log_output_capped_per_file(batch):
    spam = [w for w in batch["warnings"] if w.startswith("spam.pdf: ")]
    assert 2 <= len(spam) <= LIMITS.max_log_lines + 1
    assert "Ignoring wrong pointing object" in spam[0]
    assert spam[-1].endswith("more parser message(s) not shown")
    assert int(spam[-1].split()[1]) > 500


def test_mixed_utf8_and_gbk_lines_decoded_per_line(batch):
    stored = next(text for text in batch["texts"] if "English line" in text)
    assert "第一行是UTF-8" in stored and "中文行" in stored and "笢恅俴" not in stored


def test_memory_cap_stops_a_bomb_past_the_size_check(tmp_path):
    """With the unpacked-size check turned off, the address-space cap still stops the zip bomb, and
    the reader carries on with a fresh worker for the next file."""
    bomb = hostile.zip_bomb_docx(tmp_path / "bomb.docx", inflated_mb=300)
    good = hostile.good_docx(tmp_path / "after.docx", "still readable")
    with IsolatedReader(ParseLimits(memory_mb=300, max_expanded_bytes=2**40)) as reader:
        with pytest.raises(DocumentError, match="needs more than the 300 MB of memory"):
            reader.load(bomb, max_bytes=2**30)
        assert reader.load(good, max_bytes=2**30).blocks[0].text == "still readable"


def test_rag_question_length_capped():
    """A 126 KB question ran the agents for 273 s; now it is refused at once, from the action and the chat."""
    from localqwen.app import Workbench

    bench = Workbench.create()
    question = "Why is the sky blue?" + " Really?" * 15_750  # 126,020 characters
    started = time.monotonic()
    collected = list(bench.run("rag", "ask", {"question": question, "session": "long"}))
    assert time.monotonic() - started < 30  # no model was loaded
    errors = [e for e in collected if isinstance(e, events.Error)]
    assert errors and "the question is 126,020 characters long; questions may be at most 4,000" in errors[0].message
    assert errors[0].field == "question"
    assert collected[-1].status == "failed"
    replies = list(bench.conversations.send("rag", bench.conversations.new_session("rag"), question))
    assert any(isinstance(e, events.Error) and "at most 4,000" in e.message for e in replies)
