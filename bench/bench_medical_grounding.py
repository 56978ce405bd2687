"""Grounded answers on PubMedQA test (issue 13): the 1,689 passages of its 500 items as the
knowledge base; evidence gathered and judged for relevance by the pipeline, the draft written
extractively (no model), citations validated. Reports citation validity, citation precision (the
cited passage belongs to the question's abstract) and how often the answer says the evidence is
insufficient when the question's own abstract is removed from the pool.

    python bench/bench_medical_grounding.py                    # BM25, 500 questions, seconds
    python bench/bench_medical_grounding.py --embed            # hybrid with MiniLM (embeds 1,689 passages: minutes)
    python bench/bench_medical_grounding.py --real --limit 20  # + yes/no/maybe by the real 1.5B model from the evidence

The yes/no/maybe run prompts the real instruct model with the numbered evidence and takes the first
of yes / no / maybe in its reply; the majority-class baseline on the test set is 55.2% ("yes").
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT))

DECIDE = ("Answer the research question with yes, no or maybe, using only the numbered evidence. "
          "Start your reply with one word: yes, no or maybe. Then give one sentence citing [Evidence n].")


def wilson(hits: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if not n:
        return 0.0, 0.0
    p = hits / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return round(centre - half, 3), round(centre + half, 3)


def yes_no_maybe(items, index, limit: int, threads: int) -> dict:
    from localqwen_medical.chat import ModelLLM
    from localqwen_medical.evidence import gather, numbered
    from real_model import real_model_path

    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    llm = ModelLLM(LlamaCppEngine(real_model_path(), n_ctx=4096, n_threads=threads), max_new_tokens=48)
    chosen = list(items.items())
    chosen = chosen[:: max(1, len(chosen) // limit)][:limit]
    correct = 0
    start = time.perf_counter()
    for _, item in chosen:
        evidence = gather(index, [item["QUESTION"]], k=3)
        prompt = f"Evidence:\n{numbered(evidence.passages) or '(none)'}\n\nQuestion: {item['QUESTION']}"
        reply = llm.complete(DECIDE, prompt).lower()
        found = re.search(r"\b(yes|no|maybe)\b", reply)
        correct += bool(found and found.group(1) == item["final_decision"])
    low, high = wilson(correct, len(chosen))
    return {"items": len(chosen), "accuracy": round(correct / len(chosen), 3), "wilson95": [low, high],
            "majority_baseline": 0.552, "seconds": round(time.perf_counter() - start, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", type=Path, default=None, help="default: ../shared/data")
    parser.add_argument("--limit", type=int, default=0, help="questions (0 = all 500; with --real: the model subset)")
    parser.add_argument("--embed", action="store_true", help="hybrid search with MiniLM vectors")
    parser.add_argument("--vectors-cache", type=Path, default=Path.home() / ".cache" / "localqwen-bench" / "pubmedqa_minilm.npy")
    parser.add_argument("--real", action="store_true", help="also yes/no/maybe with the real instruct model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write the result dict here")
    args = parser.parse_args()

    from localqwen_medical.grounding_suite import build_index, evaluate_grounding, load_items

    items = load_items(args.data_dir)
    index = build_index(items, embed=args.embed, vectors_cache=args.vectors_cache if args.embed else None)
    report = {"grounding": evaluate_grounding(items, index, limit=None if args.real else (args.limit or None))}
    if args.real:
        report["yes_no_maybe"] = yes_no_maybe(items, index, args.limit or 20, args.threads)
    print(json.dumps(report, indent=2))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
