"""Honest RAG answers with a real small model: SciFact claims as questions plus off-topic questions.

The RAG plugin answers through the app (``Workbench.run("rag", "ask", ...)``) with the real
Qwen2.5-Coder-1.5B-Instruct GGUF (bench/real_model.py) over a knowledge base of 200 SciFact
abstracts (the judged ones of the chosen claims plus other test abstracts), ingested from files
as a user would. Reported:

- share of on-topic answers with a valid inline citation (goal >= 90%), the share whose
  citations the model wrote itself, and the share resting only on the app's opening quote of a
  rewrite (the rest were attributed by the grounding check);
- citation precision: cited abstracts that the qrels judge relevant to the claim (goal >= 0.8);
- off-topic refusals: "not in your documents" answers to 10 general-knowledge questions (>= 90%);
- median latency per simple question (goal <= 30 s) and model calls per question.

    python bench/bench_rag_real.py --limit 4          # 4 claims + 4 off-topic questions
    python bench/bench_rag_real.py                    # all 30 + 10 (about 15-25 minutes here)
    python bench/bench_rag_real.py --offline          # no LLM: measure the relevance gate and
                                                      # the sentence attribution on the train split

``--offline`` is how the thresholds in localqwen_rag/agents/{knowledge,grounding}.py were chosen:
on SciFact *train* claims and a separate list of off-topic questions, never on the test claims
or the 10 off-topic questions scored here. SciFact is read in place from ../shared/data.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rag_bench_data import DATA_DIR, cached_vectors, load_dataset

NEEDS_REAL_MODEL = True
CLAIMS = 30
KB_SIZE = 200
OFF_TOPIC = [
    "Who won the 2018 FIFA World Cup?",
    "What is the capital of Australia?",
    "How do I bake sourdough bread at home?",
    "Which planet has the most moons?",
    "Who wrote the novel Pride and Prejudice?",
    "What is the best way to learn to play the guitar?",
    "How tall is the Eiffel Tower?",
    "When did the Roman Empire fall?",
    "What are the rules of chess castling?",
    "Which programming language was created by Guido van Rossum?",
]
# For --offline only (tuning the gate); none of them is scored above.
OFF_TOPIC_TUNING = [
    "Who painted the Mona Lisa?", "What is the boiling point of water on Mount Everest?",
    "How many players are on a basketball team?", "What year did the Berlin Wall fall?",
    "Which country has the largest population?", "How do airplanes stay in the air?",
    "What is the plot of Hamlet?", "Who is the current president of France?",
    "How do I change a flat tire?", "What is the speed of light in a vacuum?",
    "Which team won the 2020 NBA championship?", "How do I make a cup of green tea?",
    "What is the tallest mountain in Africa?", "Who invented the telephone?",
    "What is the difference between a violin and a viola?", "How does a credit card interest rate work?",
    "What is the population of Tokyo?", "When was the first iPhone released?",
    "How do I train my dog to sit?", "What language is spoken in Brazil?",
]


def as_question(claim: str) -> str:
    """A SciFact claim (a statement) phrased as a question."""
    claim = claim.strip().rstrip(".")
    first = claim[:1].lower() if claim[1:2].islower() else claim[:1]  # keep "ATP", "BRCA1" as written
    return f"Is it true that {first}{claim[1:]}?"


def pick(data, claims: int, kb_size: int) -> tuple[list[str], list[str]]:
    """The first ``claims`` test claims (by id) and a knowledge base of their judged abstracts,
    filled up to ``kb_size`` with the judged abstracts of the following claims (on-topic distractors)."""
    qids = sorted(data.queries, key=lambda q: int(q))
    chosen = qids[:claims]
    docs: list[str] = []
    for qid in qids:
        for doc in data.qrels[qid]:
            if doc not in docs and len(docs) < kb_size:
                docs.append(doc)
        if len(docs) >= kb_size:
            break
    missing = [q for q in chosen if not set(data.qrels[q]) <= set(docs)]
    if missing:
        raise SystemExit(f"kb_size {kb_size} is too small for the judged abstracts of claims {missing}")
    return chosen, docs


def write_documents(data, doc_ids: list[str], folder: Path) -> None:
    """One Markdown file per abstract, named by its SciFact id (so a citation names the document)."""
    texts = dict(zip(data.doc_ids, data.doc_texts, strict=True))
    folder.mkdir(parents=True, exist_ok=True)
    for doc in doc_ids:
        title, _, abstract = texts[doc].partition("\n")
        (folder / f"{doc}.md").write_text(f"# {title}\n\n{abstract}\n", encoding="utf-8")


def run_real(args) -> int:
    from real_model import real_model_path

    home = Path(args.home) if args.home else Path(tempfile.mkdtemp(prefix="bench-rag-real-"))
    os.environ["LOCALQWEN_HOME"] = str(home)
    print(f"LocalQwen home: {home} (pass --home {home} to reuse its knowledge base)", flush=True)
    from localqwen.app import Workbench
    from localqwen.plugin_api import events

    data = load_dataset("scifact", args.split)
    chosen, doc_ids = pick(data, CLAIMS, KB_SIZE)
    chosen, off_topic = chosen[: args.limit or None], OFF_TOPIC[: args.limit or None]
    if args.only:  # re-ask a few claims (e.g. after a grounding change), no off-topic questions
        chosen, off_topic = [q for q in chosen if q in args.only.split(",")], []
    docs = home / ("scifact_docs" if args.split == "test" else f"scifact_{args.split}_docs")
    write_documents(data, doc_ids, docs)
    kb_name = "scifact" if args.split == "test" else f"scifact-{args.split}"
    bench = Workbench.create()
    bench.set_config("plugins.rag", "model", str(real_model_path()))
    bench.set_config("plugins.rag", "allowed_roots", [str(home)])
    start = time.perf_counter()
    # add-documents skips files it already holds unchanged, so a reused home costs only the check.
    list(bench.run("rag", "add-documents", {"paths": [str(docs)], "knowledge_base": kb_name}))
    print(f"knowledge base: {len(doc_ids)} SciFact abstracts ingested (or checked) in "
          f"{time.perf_counter() - start:.0f} s", flush=True)

    def ask(question: str, session: str) -> tuple[events.Done, float, list[str]]:
        began = time.perf_counter()
        warnings = []
        done = None
        for event in bench.run("rag", "ask", {"question": question, "session": session,
                                               "knowledge_base": kb_name, "topology": "auto"}):
            if isinstance(event, events.Warning):
                warnings.append(event.message)
            if isinstance(event, events.Done):
                done = event
        assert done is not None
        return done, time.perf_counter() - began, warnings

    ask("Is it true that statins lower cholesterol?", "warm-up")  # loads the model and the embedder once
    # Off-topic questions first: they are quick, so a run cut short by --budget still scores them all.
    off_rows = []
    for n, question in enumerate(off_topic, start=1):
        done, seconds, warnings = ask(question, f"off-{n}")
        off_rows.append({"question": question, "seconds": round(seconds, 1), "refused": bool(done.result.get("refused")),
                         "answer": done.result.get("answer", ""), "model_calls": done.result.get("model_calls")})
        print(f"[off {n}/{len(off_topic)}] {seconds:5.1f}s refused={off_rows[-1]['refused']}: {done.summary[:100]}",
              flush=True)
    rows = []
    began = time.perf_counter()
    for n, qid in enumerate(chosen, start=1):
        if args.budget and time.perf_counter() - began > args.budget:
            print(f"time budget of {args.budget} s spent: stopping after {len(rows)} of {len(chosen)} claims", flush=True)
            break
        question = as_question(data.queries[qid])
        done, seconds, warnings = ask(question, f"claim-{qid}")
        result = done.result
        cited_docs = [Path(c["source"]).stem for c in result.get("citations", [])]
        relevant = set(data.qrels[qid])
        row = {"qid": qid, "question": question, "seconds": round(seconds, 1), "status": done.status,
               "outcome": result.get("outcome"), "refused": bool(result.get("refused")),
               "cited": cited_docs, "model_cited": result.get("model_citations", []),
               "cited_by": [c.get("by") for c in result.get("citations", [])],
               "relevant": sorted(relevant), "correct": [d for d in cited_docs if d in relevant],
               "model_calls": result.get("model_calls"), "topology": result.get("topology"),
               "answer": result.get("answer", ""), "reasons": result.get("outcome_reasons", []),
               "warnings": warnings, "load_average": round(os.getloadavg()[0], 1)}
        rows.append(row)
        print(f"[{n}/{len(chosen)}] {seconds:5.1f}s calls={row['model_calls']} cited={cited_docs} "
              f"relevant={sorted(relevant)} load={row['load_average']} {done.status}: {done.summary[:120]}", flush=True)
        if args.out:  # kept as it goes, so a stopped run still leaves its answers
            Path(args.out).write_text(json.dumps({"claims": rows, "off_topic": off_rows}, indent=1,
                                                 ensure_ascii=False), encoding="utf-8")

    answered = [r for r in rows if not r["refused"]]
    cited = [r for r in rows if r["cited"]]
    total_cited = sum(len(r["cited"]) for r in rows)
    summary = {
        "claims": len(rows), "off_topic": len(off_rows),
        "valid_inline_citation": len(cited) / max(1, len(rows)),
        "model_wrote_citation": sum(bool(r["model_cited"]) for r in rows) / max(1, len(rows)),
        # cited only through the app's opening quote of a rewrite (responder.best_quote), nothing else
        "app_quote_only": sum(bool(r["cited_by"]) and set(r["cited_by"]) == {"quote"} for r in rows) / max(1, len(rows)),
        "citation_precision": sum(len(r["correct"]) for r in rows) / max(1, total_cited),
        "claims_refused": sum(r["refused"] for r in rows) / max(1, len(rows)),
        "off_topic_refused": sum(r["refused"] for r in off_rows) / max(1, len(off_rows)),
        "median_latency_s": statistics.median(r["seconds"] for r in rows) if rows else None,
        "median_off_topic_latency_s": statistics.median(r["seconds"] for r in off_rows) if off_rows else None,
        "model_calls_per_question": statistics.mean(r["model_calls"] or 0 for r in rows + off_rows),
        "graded_failure": sum(r["outcome"] == "failure" for r in answered),
        "load_average_median": statistics.median(r["load_average"] for r in rows) if rows else None,
        "cpu_count": os.cpu_count(),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps({"summary": summary, "claims": rows, "off_topic": off_rows},
                                             indent=1, ensure_ascii=False), encoding="utf-8")
        print(f"details: {args.out}")
    goals = (summary["valid_inline_citation"] >= 0.9 and summary["citation_precision"] >= 0.8
             and summary["off_topic_refused"] >= 0.9 and (summary["median_latency_s"] or 0) <= 30)
    print("goals met" if goals else "goals NOT met")
    return 0 if goals else 1


def run_offline(args) -> int:
    """Measure the relevance gate and sentence attribution on the train split, without an LLM."""
    import numpy as np
    from localqwen_rag.agents import grounding

    from localqwen.retrieval.embeddings import get_embedder
    from localqwen.retrieval.search import SearchIndex

    data = load_dataset("scifact", "train")
    chosen, doc_ids = pick(data, args.train_claims, args.train_claims * 3)
    texts = dict(zip(data.doc_ids, data.doc_texts, strict=True))
    embedder = get_embedder(None)
    vectors = cached_vectors([texts[d] for d in doc_ids], None, "scifact-train-gate-docs")
    index = SearchIndex([texts[d] for d in doc_ids], vectors, chunk_ids=doc_ids, sources=doc_ids)

    def best_signals(question: str) -> tuple[float, float, list]:
        hits = index.search(question, embedder.encode_query(question), k=5)
        words = grounding.content_words(question) - {"true"}  # "Is it true that ...?"
        dense = max((h.scores.get("dense", 0.0) for h in hits), default=0.0)
        coverage = max((grounding.support(words, grounding.content_words(f"{h.heading}\n{h.text}")) for h in hits),
                       default=0.0)
        return dense, coverage, hits

    on = [best_signals(as_question(data.queries[q])) for q in chosen]
    off = [best_signals(q) for q in OFF_TOPIC_TUNING]
    print("relevance gate (a question is answered when some passage has dense >= D or word coverage >= C; "
          "C = 1.01 means dense alone):")
    print("   D     C     on-topic kept   off-topic refused")
    for dense_min in (0.25, 0.3, 0.35, 0.4):
        for cov_min in (0.6, 0.7, 0.8, 0.9, 1.01):
            kept = np.mean([d >= dense_min or c >= cov_min for d, c, _ in on])
            refused = np.mean([not (d >= dense_min or c >= cov_min) for d, c, _ in off])
            print(f"   {dense_min:.2f}  {cov_min:.2f}  {kept:6.1%}          {refused:6.1%}")

    print("sentence attribution (the claim as the answer sentence, top-5 passages):")
    print("   threshold  attributed   precision (attributed passage judged relevant)")
    claims = [(data.queries[q], set(data.qrels[q]), hits) for q, (_, _, hits) in zip(chosen, on, strict=True)]
    for threshold in (0.4, 0.5, 0.6, 0.7, 0.8):
        attributed = correct = 0
        for claim, relevant, hits in claims:
            words = grounding.content_words(claim)
            scores = [grounding.support(words, grounding.content_words(f"{h.heading}\n{h.text}")) for h in hits]
            if scores and max(scores) >= threshold:
                attributed += 1
                correct += hits[int(np.argmax(scores))].chunk_id in relevant
        print(f"   {threshold:.1f}        {attributed / len(claims):6.1%}       {correct / max(1, attributed):.3f}")

    # The quoted rewrite opens with the passage sentence closest to the question (responder.best_quote):
    # how often is that passage one the qrels judge relevant, against simply taking the top hit?
    from localqwen_rag.agents import knowledge, responder

    gate = knowledge.KnowledgeSettings()
    relevant_hits = [[h for h in hits if knowledge.is_relevant(h, gate)] for _, _, hits in claims]  # the evidence
    quoted = [(responder.best_quote(hits, as_question(claim)), hits, relevant)
              for (claim, relevant, _), hits in zip(claims, relevant_hits, strict=True)]
    with_quote = [(q, hits, relevant) for q, hits, relevant in quoted if q]
    right = sum(hits[q[0] - 1].chunk_id in relevant for q, hits, relevant in with_quote)
    top_right = sum(bool(hits) and hits[0].chunk_id in relevant for _, hits, relevant in quoted)
    print(f"quoted rewrite: a quote for {len(with_quote) / len(quoted):.1%} of the claims; its passage judged "
          f"relevant for {right / max(1, len(with_quote)):.1%} (the top hit: {top_right / len(quoted):.1%})")

    labelled = _labelled_rationales(data, chosen, texts)
    print("contradiction check on SciFact claim / rationale pairs (flagged share; want high on CONTRADICT, "
          "low on SUPPORT):")
    default_overlap = grounding.CONTRADICTION_OVERLAP
    for overlap in (0.4, 0.5, 0.6):
        grounding.CONTRADICTION_OVERLAP = overlap
        flagged = {"SUPPORT": 0, "CONTRADICT": 0}
        counts = {"SUPPORT": 0, "CONTRADICT": 0}
        for claim, rationale, label in labelled:
            counts[label] += 1
            flagged[label] += bool(grounding.ground(f"{claim} [1]", [rationale]).contradictions)
        print(f"   overlap >= {overlap:.1f}: " + ", ".join(
            f"{label} {flagged[label] / max(1, counts[label]):.1%} of {counts[label]}" for label in counts))
    grounding.CONTRADICTION_OVERLAP = default_overlap
    return 0


def _labelled_rationales(data, chosen, texts):
    """(claim, rationale sentences of its abstract, SUPPORT/CONTRADICT) from queries.jsonl metadata."""
    import csv
    import io
    import zipfile

    from localqwen.retrieval.evaluation import _sentences  # the same parser as the loader

    csv.field_size_limit(1 << 30)
    sentences: dict[str, list[str]] = {}
    with zipfile.ZipFile(DATA_DIR / "scifact" / "scifact.zip") as archive, archive.open("corpus_train.csv") as raw:
        for row in csv.DictReader(io.TextIOWrapper(raw, encoding="utf-8")):
            sentences[row["doc_id"]] = _sentences(row["abstract"])
    wanted = set(chosen)
    pairs = []
    with open(DATA_DIR / "scifact" / "queries.jsonl", encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            if row["_id"] not in wanted:
                continue
            for doc, items in (row.get("metadata") or {}).items():
                for item in items:
                    picked = [sentences.get(doc, [])[i] for i in item["sentences"] if i < len(sentences.get(doc, []))]
                    if picked:
                        pairs.append((row["text"], " ".join(picked), item["label"]))
    return pairs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=int, default=0, help="only the first N claims and N off-topic questions")
    parser.add_argument("--offline", action="store_true", help="measure the gate and attribution, no LLM")
    parser.add_argument("--train-claims", type=int, default=150, help="train claims for --offline")
    parser.add_argument("--out", default="", help="write every answer and the summary as JSON here")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds for the claims; stop asking new ones after it (off-topic ones run first)")
    parser.add_argument("--split", default="test", choices=["test", "train"],
                        help="SciFact split of the claims and abstracts: prompts and thresholds are tuned on "
                             "train, the reported numbers come from test")
    parser.add_argument("--only", default="", help="comma-separated SciFact query ids to ask (and nothing else)")
    parser.add_argument("--home", default="", help="LocalQwen home to use (reuses its knowledge base); "
                                                   "default: a new temporary one")
    args = parser.parse_args(argv)
    if not (DATA_DIR / "scifact").is_dir():
        print(f"SciFact is not at {DATA_DIR / 'scifact'} (see ../shared/data/README.md)")
        return 1
    return run_offline(args) if args.offline else run_real(args)


if __name__ == "__main__":
    sys.exit(main())
