"""The child side of :mod:`localqwen.retrieval.isolated_reader`: reads documents one request at a time
inside a process whose address space is capped, so a hostile file can cost this process, never the app.

Started as ``python -m localqwen.retrieval.reader_worker MEMORY_MB``. It first answers
``{"ready": true}`` once its parsers are imported; then requests arrive as one JSON line each on
stdin, answers leave as one JSON line each on the original stdout; anything a parser
prints goes to stderr instead (fd 1 is pointed there), and parser log records are kept per file,
capped, and returned as the document's warnings. The worker exits at end of input, and after a
``MemoryError`` (its heap may be left fragmented; the parent starts a fresh one).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import warnings
from pathlib import Path
from typing import Any


class CappedLog(logging.Handler):
    """Keeps the first ``limit`` log lines of the current file and counts the rest."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.limit = 5
        self.lines: list[str] = []
        self.dropped = 0

    def start_file(self, limit: int) -> None:
        self.limit, self.lines, self.dropped = limit, [], 0

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.lines) < self.limit:
            self.lines.append(f"{record.levelname.lower()} from {record.name}: {record.getMessage()[:500]}")
        else:
            self.dropped += 1

    def summary(self, name: str) -> list[str]:
        lines = [f"{name}: {line}" for line in self.lines]
        if self.dropped:
            lines.append(f"{name}: {self.dropped} more parser message(s) not shown")
        return lines


def limit_memory(megabytes: int) -> None:
    if megabytes <= 0:
        return
    try:
        import resource
    except ImportError:  # Windows: no address-space limit, the time limit still applies
        return

    cap = megabytes * 2**20
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap if hard == resource.RLIM_INFINITY or hard > cap else hard))


def answer(request: dict[str, Any], log: CappedLog) -> dict[str, Any]:
    from localqwen.retrieval.loaders import DocumentError, load_document

    path = Path(request["path"])
    log.start_file(int(request.get("max_log_lines", 5)))
    try:
        document = load_document(path, max_bytes=int(request["max_bytes"]),
                                 max_expanded_bytes=int(request["max_expanded_bytes"]))
    except DocumentError as exc:
        return {"ok": False, "error": str(exc)}
    except MemoryError:
        raise  # main() answers it and exits: this heap is best thrown away
    except RecursionError:
        return {"ok": False, "error": f"{path.name}: the file nests too deeply to read (built to crash parsers?)"}
    except Exception as exc:  # any parser bug on a hostile file is that file's problem only
        return {"ok": False, "error": f"{path.name}: could not be read ({type(exc).__name__}: {str(exc)[:300]})"}
    return {"ok": True, "encoding": document.encoding, "warnings": document.warnings + log.summary(path.name),
            "blocks": [[block.text, block.page, list(block.headings)] for block in document.blocks]}


def main(argv: list[str]) -> int:
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # a parser's print() must not corrupt the answers
    sys.stdout = sys.stderr
    memory_mb = int(argv[0]) if argv else 0
    log = CappedLog()
    logging.basicConfig(level=logging.WARNING, handlers=[log], force=True)
    logging.captureWarnings(True)
    warnings.simplefilter("default")
    limit_memory(memory_mb)
    # Import the parsers now and say so: the parent's per-file clock then measures parsing only.
    import pypdf  # noqa: F401

    import localqwen.retrieval.loaders  # noqa: F401

    replies.write(json.dumps({"ready": True}) + "\n")
    replies.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            reply = answer(request, log)
        except MemoryError:
            reply = {"ok": False, "exit": True,
                     "error": f"{Path(request['path']).name}: reading it needs more than the {memory_mb} MB of memory "
                              "allowed for one document (a compression bomb?)"}
        replies.write(json.dumps(reply, ensure_ascii=False) + "\n")
        replies.flush()
        if reply.get("exit"):
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
