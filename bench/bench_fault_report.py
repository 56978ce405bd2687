"""Fault report for issue 16: run every hostile-input / two-writer case and print what held.

Runs ``pytest tests/hardening`` (each case attacks the real component: a server on loopback, real
processes started at once, hostile files made by the test), reads its JUnit XML and prints one
line per case, grouped by the item of the issue it covers, then the totals.

    python bench/bench_fault_report.py            # every case (the two-process ones take minutes)
    python bench/bench_fault_report.py --quick    # without the cases marked slow
    python bench/bench_fault_report.py -k gguf    # only cases matching a pytest -k expression

Exit status 0 when every case that ran passed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "hardening"

# Which part of issue 16 each test file covers (by file name prefix).
ITEMS = [
    ("test_web", "1 web view: Host / Origin / CORS, logins, uploads"),
    ("test_writers", "2 two writers at once (knowledge base, captions)"),
    ("test_ingest", "3 hostile documents in ingestion"),
    ("test_model_safety", "4 model safety: pickle, trust_remote_code"),
    ("test_gguf_header", "5 crafted GGUF headers"),
    ("test_config_errors", "6 config errors"),
    ("test_captions_output", "6 captions output"),
    ("test_doctor", "doctor: what is protected"),
]


@dataclass
class Case:
    file: str
    name: str
    outcome: str  # passed | failed | error | skipped
    seconds: float
    detail: str = ""


def item_of(file: str) -> str:
    stem = Path(file).stem
    return next((label for prefix, label in ITEMS if stem.startswith(prefix)), "other")


def read_junit(path: Path) -> list[Case]:
    cases = []
    for node in ET.parse(path).getroot().iter("testcase"):
        file = (node.get("file") or node.get("classname", "").replace(".", "/") + ".py").rsplit("/", 1)[-1]
        outcome, detail = "passed", ""
        for kind in ("failure", "error", "skipped"):
            child = node.find(kind)
            if child is not None:
                outcome = {"failure": "failed"}.get(kind, kind)
                detail = (child.get("message") or "").splitlines()[0][:160] if child.get("message") else ""
                break
        cases.append(Case(file, node.get("name", "?"), outcome, float(node.get("time") or 0), detail))
    return cases


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip the cases marked slow (two-process runs)")
    parser.add_argument("-k", dest="keyword", help="only cases matching this pytest -k expression")
    parser.add_argument("--junit", type=Path, help="keep the JUnit XML here")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as scratch:
        junit = args.junit or Path(scratch) / "hardening.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CASES), f"--junitxml={junit}",
                   "-o", "junit_family=xunit1"]  # xunit1 keeps each case's file name
        if args.quick:
            command += ["-m", "not slow"]
        if args.keyword:
            command += ["-k", args.keyword]
        started = time.perf_counter()
        run = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if not junit.exists():
            print(run.stdout[-3000:] + run.stderr[-3000:])
            print(f"pytest did not run (exit {run.returncode})")
            return 2
        cases = read_junit(junit)

    totals: dict[str, int] = {}
    for label in dict.fromkeys([item_of(c.file) for c in sorted(cases, key=lambda c: item_of(c.file))]):
        print(f"== item {label}")
        for case in [c for c in cases if item_of(c.file) == label]:
            mark = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}[case.outcome]
            line = f"  {mark:5} {Path(case.file).stem}::{case.name} ({case.seconds:.1f} s)"
            print(line + (f"  -- {case.detail}" if case.detail and case.outcome != "passed" else ""))
    for case in cases:
        totals[case.outcome] = totals.get(case.outcome, 0) + 1
    summary = ", ".join(f"{totals.get(k, 0)} {k}" for k in ("passed", "failed", "error", "skipped"))
    print(f"fault report: {len(cases)} cases: {summary} in {elapsed:.0f} s"
          + (" (quick: slow cases not run)" if args.quick else ""))
    return 0 if not totals.get("failed") and not totals.get("error") else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
