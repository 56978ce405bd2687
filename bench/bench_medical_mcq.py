"""Does retrieval help a small real model on medical multiple-choice questions? (issue 13)

MIRAGE found that retrieval can hurt small models, so we measure instead of assuming: the real
instruction model (Qwen2.5-Coder-1.5B-Instruct Q4_K_M, see bench/real_model.py) answers MedQA
(USMLE) and MedMCQA questions once with the question alone and once with the top-k passages that
BM25 finds in a medical corpus built from the data at hand: MedMCQA's explanations (the question's
own explanation is never retrieved for it: that would leak the answer) and PubMedQA's abstracts.
The answer is one letter, forced by a llama.cpp grammar, so nothing is lost to parsing.

Prints accuracy with a 95% Wilson interval for both, the paired difference with its discordant
counts and an exact McNemar p-value, and the ratio with/without retrieval.

    python bench/bench_medical_mcq.py --limit 100            # ~20-40 min on a 2-core CPU
    python bench/bench_medical_mcq.py --limit 10 --sets medqa  # a quick look
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from localqwen.vocabulary.statistics import mcnemar_p, wilson_interval

NEEDS_REAL_MODEL = True  # bench/run_all.py runs it only with --real
ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
LETTERS = "ABCD"
PASSAGE_CHARS = 700  # each retrieved passage is cut here, so k passages fit the context
SYSTEM = ("You are a medical expert taking an exam. Answer the multiple-choice question with the letter "
          "of the single best option and nothing else.")


@dataclass
class Question:
    key: str  # the source item's id: its own explanation is never retrieved for it
    text: str
    options: list[str]  # four, in A-D order
    answer: str  # "A".."D"


def load_medqa(data: Path) -> list[Question]:
    rows = [json.loads(line) for line in (data / "medqa_us" / "phrases_no_exclude_test.jsonl").open()]
    return [Question(f"medqa-{i}", row["question"], [row["options"][letter] for letter in LETTERS],
                     row["answer_idx"]) for i, row in enumerate(rows) if set(LETTERS) <= set(row["options"])]


def load_medmcqa(data: Path) -> list[Question]:
    rows = [json.loads(line) for line in (data / "medmcqa" / "dev.json").open()]
    # cop is 1-based in this release (1..4): the option that is correct.
    return [Question(row["id"], row["question"], [row["opa"], row["opb"], row["opc"], row["opd"]],
                     LETTERS[int(row["cop"]) - 1]) for row in rows if row.get("cop") in (1, 2, 3, 4)]


def load_corpus(data: Path) -> tuple[list[str], list[str]]:
    """Passages and, beside each, the id of the item it came from."""
    texts, owners = [], []
    for line in (data / "medmcqa" / "dev.json").open():
        row = json.loads(line)
        if row.get("exp"):
            texts.append(" ".join(str(row["exp"]).split()))
            owners.append(row["id"])
    import ast

    for pmid, item in json.loads((data / "pubmedqa" / "ori_pqal.json").read_text()).items():
        contexts = item["CONTEXTS"]
        if isinstance(contexts, str):  # stored as a Python-style list in this release
            contexts = ast.literal_eval(contexts)
        texts.append(" ".join(contexts))
        owners.append(f"pubmed-{pmid}")
    return texts, owners


def prompt(question: Question, passages: list[str]) -> list[dict[str, str]]:
    options = "\n".join(f"{letter}. {option}" for letter, option in zip(LETTERS, question.options, strict=True))
    evidence = ""
    if passages:
        evidence = "Reference passages (they may or may not be relevant):\n" + "\n".join(
            f"[{n}] {passage[:PASSAGE_CHARS]}" for n, passage in enumerate(passages, 1)) + "\n\n"
    return [{"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"{evidence}Question: {question.text}\n{options}\nAnswer:"}]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="questions per set (a seeded sample)")
    parser.add_argument("--sets", nargs="+", default=["medqa", "medmcqa"], choices=["medqa", "medmcqa"])
    parser.add_argument("--k", type=int, default=3, help="passages given with each question")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--model", type=Path, help="a GGUF (default: the real model from bench/real_model.py)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--output", type=Path, help="write the report as JSON here too")
    args = parser.parse_args()

    from llama_cpp import Llama, LlamaGrammar

    from localqwen.retrieval.bm25 import BM25Index

    if args.model is None:
        sys.path.insert(0, str(ROOT / "bench"))
        from real_model import real_model_path

        args.model = real_model_path()
    llm = Llama(model_path=str(args.model), n_ctx=4096, n_threads=args.threads, verbose=False, seed=0)
    grammar = LlamaGrammar.from_string('root ::= [ABCD]', verbose=False)
    texts, owners = load_corpus(args.data)
    index = BM25Index(texts)
    loaders = {"medqa": load_medqa, "medmcqa": load_medmcqa}
    report = {"model": args.model.name, "k": args.k, "corpus_passages": len(texts), "sets": {}}
    for name in args.sets:
        questions = loaders[name](args.data)
        random.Random(args.seed).shuffle(questions)
        questions = questions[: args.limit]
        right = {"without": [], "with": []}
        started = time.perf_counter()
        for number, question in enumerate(questions, 1):
            ids, _ = index.search(question.text + " " + " ".join(question.options), k=args.k + 1)
            passages = [texts[i] for i in ids if owners[i] != question.key][: args.k]
            for mode, given in (("without", []), ("with", passages)):
                reply = llm.create_chat_completion(prompt(question, given), max_tokens=1, temperature=0.0,
                                                   grammar=grammar)
                right[mode].append(reply["choices"][0]["message"]["content"].strip() == question.answer)
            elapsed = time.perf_counter() - started
            print(f"\r{name}: {number}/{len(questions)}  without {sum(right['without'])}  with {sum(right['with'])}"
                  f"  ({elapsed / number:.1f} s/question)", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
        total = len(questions)
        only_without = sum(a and not b for a, b in zip(right["without"], right["with"], strict=True))
        only_with = sum(b and not a for a, b in zip(right["without"], right["with"], strict=True))
        result = {"questions": total, "chance": 0.25}
        for mode in ("without", "with"):
            correct = sum(right[mode])
            low, high = wilson_interval(correct, total)
            result[f"accuracy_{mode}_retrieval"] = round(correct / total, 3)
            result[f"ci95_{mode}_retrieval"] = [round(low, 3), round(high, 3)]
        result["right_only_without"] = only_without
        result["right_only_with"] = only_with
        result["mcnemar_p"] = round(mcnemar_p(only_without, only_with), 3)
        without = result["accuracy_without_retrieval"]
        result["ratio_with_over_without"] = round(result["accuracy_with_retrieval"] / without, 3) if without else None
        report["sets"][name] = result
        print(f"{name}: without retrieval {without:.3f} {result['ci95_without_retrieval']}, "
              f"with {result['accuracy_with_retrieval']:.3f} {result['ci95_with_retrieval']}, "
              f"ratio {result['ratio_with_over_without']}, McNemar p={result['mcnemar_p']} "
              f"({only_with} only with, {only_without} only without; n={total})")
    print(json.dumps(report, indent=2))
    if args.output:
        args.output.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
