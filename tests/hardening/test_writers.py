"""Issue 16, item 2: two writers at once lose nothing.

Real processes, started at the same moment through a start file: two `add_paths` runs on one
knowledge base (real embedder, LanceDB and SQLite), and two captioning runs on one output folder.
The knowledge-base writers hold their LanceDB commit open for a moment before recording it in
SQLite (the window where the reported run lost a batch), and a reader in the parent searches
right then: before the writer lock, the reader or the other writer "recovered" the live commit
away.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from localqwen.storage.file_lock import FileLock

REPO = Path(__file__).resolve().parents[2]

KB_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from localqwen.app import Workbench
    from localqwen.retrieval.knowledge_base import KnowledgeBase, KnowledgeBaseManager

    name, folder, start_file, hold = sys.argv[1:5]
    services = Workbench.create().services
    manager = KnowledgeBaseManager(services.database, services.paths.data_dir / "retrieval", device=services.device)
    kb = manager.get(name)
    kb.embedder.encode(["warm up"])  # load the model before the start line: both commit close together
    original = KnowledgeBase._record

    def slow_record(self, version, conn=None):
        if conn is not None:  # the commit: LanceDB has the batch, SQLite does not know it yet
            print("lance committed", flush=True)
            time.sleep(float(hold))
        return original(self, version, conn)

    KnowledgeBase._record = slow_record
    print("ready", flush=True)
    while not Path(start_file).exists():
        time.sleep(0.005)
    for event in kb.add_paths([folder]):
        kind = type(event).__name__
        if kind in ("Done", "Log", "Error"):
            print(kind, getattr(event, "status", ""), getattr(event, "summary", "") or getattr(event, "message", ""),
                  flush=True)
""")


def _workbench_kb_manager():
    from localqwen.app import Workbench
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager

    services = Workbench.create().services
    return KnowledgeBaseManager(services.database, services.paths.data_dir / "retrieval", device=services.device)


def _batch(folder: Path, label: str, count: int) -> Path:
    folder.mkdir(parents=True)
    for index in range(count):
        (folder / f"{label}_{index}.txt").write_text(
            f"Report {label} {index}. The {label}{index}word survey counted herons and otters by the river.\n")
    return folder


class _Child:
    """A subprocess whose output lines are collected by a thread (so two can be watched at once)."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True,
                                        # one torch thread each: two children on 2 threads each
                                        # would fight over 2 cores
                                        env=dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1"))
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.strip())

    def wait_for(self, text: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while not any(text in line for line in self.lines):
            if self.process.poll() is not None and not self._reader.is_alive():
                raise AssertionError(f"child exited before '{text}': {self.lines}\n{self.process.stderr.read()[-3000:]}")
            assert time.monotonic() < deadline, f"no '{text}' within {timeout} s: {self.lines}"
            time.sleep(0.01)

    def finish(self, timeout: float = 300) -> list[str]:
        self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        assert self.process.returncode == 0, self.process.stderr.read()[-3000:]
        return self.lines


@pytest.mark.slow  # two subprocesses each import torch and load the embedding model
def test_two_processes_adding_batches_at_once_both_land(tmp_path):
    manager = _workbench_kb_manager()
    manager.create("shared")
    batches = {label: _batch(tmp_path / label, label, 5) for label in ("north", "south")}
    start = tmp_path / "start"
    children = {label: _Child([KB_WRITER, "shared", str(folder), str(start), "1.5"])
                for label, folder in batches.items()}
    for child in children.values():
        child.wait_for("ready")
    start.touch()  # both begin at the same moment

    # A reader while the first writer is between its LanceDB commit and its SQLite record: it sees
    # the last recorded state and must not roll the live writer back.
    while not any("lance committed" in line for child in children.values() for line in child.lines):
        assert all(c.process.poll() is None for c in children.values()), [c.lines for c in children.values()]
        time.sleep(0.01)
    reader = _workbench_kb_manager().get("shared")
    assert reader.search("herons otters river", k=20) == []  # nothing recorded yet

    outputs = {label: child.finish() for label, child in children.items()}
    for label, lines in outputs.items():
        assert any(line.startswith("Done ok 5 file(s) added") for line in lines), (label, lines)
    assert any("waiting for another writer" in line for lines in outputs.values() for line in lines), outputs

    fresh = _workbench_kb_manager().get("shared")
    files = fresh.files()
    assert sorted(Path(f.path).name for f in files) == sorted(f"{label}_{i}.txt" for label in batches for i in range(5))
    recorded_chunks = sum(f.chunks for f in files)
    assert len(fresh.index()) == recorded_chunks  # SQLite and the searchable LanceDB version agree
    table, _version = fresh.chunk_store.open(fresh._recorded_version(), repair=False)
    assert table.count_rows() == recorded_chunks
    import lancedb

    latest = lancedb.connect(str(fresh.chunk_store.folder)).open_table(fresh.chunk_store.table_name)
    assert latest.count_rows() == recorded_chunks  # no unrecorded rows beyond the recorded version
    for label in batches:
        for index in range(5):
            hits = fresh.search(f"{label}{index}word", k=3, mode="bm25")
            assert hits and Path(hits[0].source).name == f"{label}_{index}.txt"
    # Adding a batch again finds it all recorded (the reported run said "0 added, 300 unchanged"
    # while half of it was unsearchable).
    again = fresh.ingest([batches["north"]])
    assert again.result["skipped"] and not again.result["added"]


CAPTION_RUN = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from localqwen_captioner.batch import BatchOptions, BatchSummary, CaptionJournal, caption_images
    from localqwen_captioner.images import find_images

    source, out_dir, start_file = sys.argv[1:4]

    def captions(images):
        time.sleep(0.02)  # a model takes a while per batch: the two runs overlap
        return [f"a picture {item.path.stem}" for item in images]

    images = find_images(Path(source))
    journal = CaptionJournal(Path(out_dir))
    summary = BatchSummary()
    print("ready", flush=True)
    while not Path(start_file).exists():
        time.sleep(0.005)
    for event in caption_images(images, Path(source), captions, journal, BatchOptions(model="m", batch_size=4),
                                None, summary):
        if type(event).__name__ == "Log":
            print("Log", event.message, flush=True)
    print("summary", summary.captioned, summary.skipped, flush=True)
""")


def test_two_captioning_runs_on_one_output_folder_write_each_image_once(tmp_path):
    from PIL import Image

    source = tmp_path / "images"
    source.mkdir()
    for index in range(60):
        Image.new("RGB", (16, 16), (index * 4, 100, 200)).save(source / f"img_{index:02d}.png")
    out_dir, start = tmp_path / "captions", tmp_path / "start"
    children = [_Child([CAPTION_RUN, str(source), str(out_dir), str(start)]) for _ in range(2)]
    for child in children:
        child.wait_for("ready", timeout=120)
    start.touch()
    outputs = [child.finish(timeout=120) for child in children]

    rows = [json.loads(line) for line in (out_dir / "captions.jsonl").read_text().splitlines()]
    assert len(rows) == 60 and len({row["image"] for row in rows}) == 60  # was 120 rows for 60 images
    summaries = sorted(tuple(int(n) for n in next(line for line in lines if line.startswith("summary")).split()[1:])
                       for lines in outputs)
    assert summaries == [(0, 60), (60, 0)]  # one captioned all; the other waited, then resumed past them
    assert any("another captioning run" in line and "waiting" in line for lines in outputs for line in lines)
    csv_lines = (out_dir / "captions.csv").read_text().splitlines()
    assert len(csv_lines) == 61


def test_a_killed_lock_holder_releases_the_lock(tmp_path):
    """The OS drops a dead holder's lock: that is what tells recovery the writer is gone."""
    path = tmp_path / "writer.lock"
    holder = _Child([textwrap.dedent(f"""
        import time
        from localqwen.storage.file_lock import FileLock
        lock = FileLock({str(path)!r})
        lock.acquire()
        print("held", flush=True)
        time.sleep(120)
    """)])
    holder.wait_for("held", timeout=60)
    lock = FileLock(path)
    assert lock.busy() and not lock.acquire(blocking=False)
    assert lock.holder().startswith(f"pid {holder.process.pid} ")
    started = time.monotonic()
    assert not lock.acquire(timeout=0.3)
    assert time.monotonic() - started >= 0.3
    holder.process.send_signal(signal.SIGKILL)
    holder.process.wait(timeout=30)
    assert lock.acquire(timeout=10)
    lock.release()
    assert not lock.busy() and lock.acquire(blocking=False)  # the probe leaves it free
    lock.release()


@pytest.mark.parametrize("shared", [True, False], ids=["one lock object", "one object per thread"])
def test_the_lock_serialises_threads_of_one_process_too(tmp_path, shared):
    """Shared object: its thread lock; separate objects: the OS lock (flock holds per open file)."""
    path = tmp_path / "writer.lock"
    common = FileLock(path)
    inside, overlaps = [], []

    def work() -> None:
        lock = common if shared else FileLock(path)
        for _ in range(20):
            with lock:
                inside.append(1)
                if len(inside) > 1:
                    overlaps.append(len(inside))
                time.sleep(0.001)
                inside.pop()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not overlaps


def test_deleting_a_knowledge_base_waits_for_its_writer_and_its_lock_file_goes_on_restart(tmp_path):
    """Delete takes the writer lock (not mid-commit of another process); the next start removes the
    lock file of a knowledge base that no longer exists."""
    from localqwen.retrieval.knowledge_base import KnowledgeBaseManager
    from localqwen.storage.database import Database

    database = Database(tmp_path / "db.sqlite")
    root = tmp_path / "retrieval"
    manager = KnowledgeBaseManager(database, root)
    with database.connect() as conn:  # a knowledge base row as create() writes it, without loading an embedder
        conn.execute("INSERT INTO knowledge_bases(id, name, embedding_model, dimension, chunk_tokens, chunk_overlap,"
                     " table_name, table_version, created_at) VALUES ('abc123', 'gone', 'm', 4, 200, 40, 'chunks_0',"
                     " NULL, 0)")
    lock = manager.writer_lock("abc123")
    assert lock.acquire(blocking=False)  # a writer is committing
    deleted = threading.Event()
    deleter = threading.Thread(target=lambda: (manager.delete("gone"), deleted.set()))
    deleter.start()
    assert not deleted.wait(0.3)  # waits for the writer
    lock.release()
    assert deleted.wait(10)
    deleter.join()
    assert (root / "kb-abc123.lock").exists()
    KnowledgeBaseManager(database, root)  # the next start
    assert not (root / "kb-abc123.lock").exists()


def test_a_waiting_writer_can_give_up_or_be_cancelled(tmp_path):
    """Waiting for the lock honours a timeout and a cancel, also against another thread of this process."""
    lock = FileLock(tmp_path / "writer.lock")
    assert lock.acquire()
    for contender in (lock, FileLock(tmp_path / "writer.lock")):  # the same object (thread lock), another (OS lock)
        result: list[bool] = []
        thread = threading.Thread(target=lambda c=contender, r=result: r.append(c.acquire(timeout=0.2)))
        thread.start()
        thread.join(timeout=10)
        assert result == [False]
        deadline = time.monotonic() + 0.2
        started = time.monotonic()
        assert not contender.acquire(cancelled=lambda d=deadline: time.monotonic() > d)
        assert 0.15 < time.monotonic() - started < 5
    lock.release()
    assert lock.acquire(blocking=False)
    lock.release()
