"""Grounded answers on PubMedQA test (issue 13): the 1,689 passages of its 500 items as the
knowledge base; evidence gathered and judged for relevance by the pipeline, the draft written
extractively (no model), citations validated. Reports citation validity, citation precision (the
cited passage belongs to the question's abstract) and how often the answer says the evidence is
insufficient when the question's own abstract is removed from the pool.

    python bench/bench_medical_grounding.py                    # BM25, 500 questions, seconds
    python bench/bench_medical_grounding.py --embed            # hybrid with MiniLM (embeds 1,689 passages: minutes)

Yes / no / maybe accuracy with a real model (the label forced by a grammar, the question's own
abstract and the retrieved evidence on the same items) is bench/bench_medical_pubmedqa.py.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--limit", type=int, default=0, help="questions (0 = all 500)")
    parser.add_argument("--embed", action="store_true", help="hybrid search with MiniLM vectors")
    parser.add_argument("--vectors-cache", type=Path, default=Path.home() / ".cache" / "localqwen-bench" / "pubmedqa_minilm.npy")
    parser.add_argument("--json", type=Path, help="write the result dict here")
    args = parser.parse_args()

    from localqwen_medical.grounding_suite import build_index, evaluate_grounding, load_items

    items = load_items(args.data_dir)
    index = build_index(items, embed=args.embed, vectors_cache=args.vectors_cache if args.embed else None)
    report = {"grounding": evaluate_grounding(items, index, limit=args.limit or None)}
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
