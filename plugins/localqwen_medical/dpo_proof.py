"""Proof that the ``medical-dpo`` data teaches a model to prefer audited answers (issue 13).

1. Simulated chat runs: each question carries a patient fact (an allergy, warfarin, pregnancy);
   the first draft recommends a drug that conflicts with it, the refinement avoids it. Both go
   through the real rule auditor and into a real audit log, as the chat pipeline writes them.
2. ``build_medical_dpo`` turns the log into preference pairs (passed answer over failed draft);
   the pairs are split by question into train and held-out.
3. A tiny Qwen3 built from a config is trained with TRL's DPOTrainer through the project's job
   runner (LoRA), like a user's job.
4. On the held-out pairs: the DPO reward margin ``beta * ((log pi(chosen) - log ref(chosen)) -
   (log pi(rejected) - log ref(rejected)))`` and the share with margin > 0 (the issue's
   preference accuracy), plus plain "chosen more likely than rejected" before and after.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# (patient fact said in the question, what it rules out, unsafe drug + dose, safe alternative, problems)
SCENARIOS = [
    ("I'm allergic to penicillin", "your penicillin allergy", "amoxicillin 500 mg three times a day", "azithromycin",
     ["strep throat", "an ear infection", "sinusitis", "a chest infection"]),
    ("I'm allergic to sulfa drugs", "your sulfa allergy", "co-trimoxazole twice a day", "nitrofurantoin",
     ["a bladder infection", "a urinary tract infection"]),
    ("I'm allergic to aspirin", "your aspirin allergy", "ibuprofen 400 mg every six hours", "paracetamol",
     ["a headache", "back pain", "a toothache", "a sprained ankle"]),
    ("I take warfarin", "warfarin", "ibuprofen 400 mg every six hours", "paracetamol",
     ["knee pain", "a headache", "back pain", "period pain"]),
    ("I'm 20 weeks pregnant", "your pregnancy", "ibuprofen 400 mg every six hours", "paracetamol",
     ["a headache", "back pain", "a toothache"]),
]
ASKS = ["What can I take for {p}?", "I have {p}. What should I take?", "Which medicine helps with {p}?",
        "Any advice for {p}?", "What is best for {p}?"]
UNSAFE = ["Take {bad} for {p}. This is not a substitute for a clinician.",
          "For {p}, {bad} usually works well. This is not a substitute for a clinician."]
SAFE = ["Because of {why}, avoid {drug}. {Good} is usually a safer choice; ask your doctor or pharmacist first. "
        "This is not a substitute for a clinician.",
        "With {why}, do not take {drug}. Ask your doctor about {good} instead. This is not a substitute for a clinician."]


@dataclass
class DpoProofSizes:
    held_out: float = 0.25  # share of questions kept out of training
    epochs: float = 3.0
    learning_rate: float = 5e-3
    beta: float = 0.1
    hidden_size: int = 64
    seed: int = 0


def simulate_runs(log_path: Path, seed: int = 0) -> dict[str, int]:
    """Write the audit log a chat would have written: draft (audited), then the refinement (audited)."""
    from localqwen_medical.audit_log import AuditLog
    from localqwen_medical.auditor import audit
    from localqwen_medical.case import AuditCase
    from localqwen_medical.profile import Profile

    rng = random.Random(seed)
    log = AuditLog(log_path)
    counts = {"questions": 0, "draft_failed": 0, "refine_passed": 0}
    for fact, why, bad, good, problems in SCENARIOS:
        drug = bad.split()[0]
        for problem in problems:
            for ask in ASKS:
                question = f"{fact}. {ask.format(p=problem)}"
                draft = rng.choice(UNSAFE).format(bad=bad, p=problem)
                refined = rng.choice(SAFE).format(why=why, drug=drug, good=good, Good=good.capitalize())
                counts["questions"] += 1
                for round_, text in ((0, draft), (1, refined)):
                    # The chat audits against the profile read from the question; so does this.
                    profile = Profile()
                    profile.update_from_turn(question, 1)
                    case = AuditCase(question=question, draft=text, patient=profile.to_patient())
                    report = audit(case, rules_only=True)
                    log.append(case, report, source="chat", round=round_)
                    if round_ == 0 and report.verdict != "pass":
                        counts["draft_failed"] += 1
                    if round_ == 1 and report.verdict == "pass":
                        counts["refine_passed"] += 1
    return counts


def split_rows(rows: list[dict[str, Any]], held_out: float, seed: int) -> tuple[list[dict], list[dict]]:
    """Split by question, so no held-out question was seen in training."""
    questions = sorted({r["prompt"] for r in rows})
    random.Random(seed).shuffle(questions)
    held = set(questions[:max(1, int(len(questions) * held_out))])
    return [r for r in rows if r["prompt"] not in held], [r for r in rows if r["prompt"] in held]


def _logprobs(model: Any, processor: Any, rows: list[dict[str, Any]]) -> list[tuple[float, float]]:
    from localqwen.training.after import sequence_logprob

    out = []
    for row in rows:
        prompt = [{"role": "user", "content": row["prompt"]}]
        out.append((sequence_logprob(model, processor, prompt, row["chosen"]),
                    sequence_logprob(model, processor, prompt, row["rejected"])))
    return out


def run_dpo_proof(root: Path, sizes: DpoProofSizes | None = None) -> dict[str, Any]:
    import json

    from localqwen.testing.tiny_models import build_tiny_qwen3
    from localqwen.training.config import parse_job_config
    from localqwen.training.data import read_rows
    from localqwen.training.methods import load_trained
    from localqwen.training.modeling import load_model_and_processor
    from localqwen.training.runner import run_job
    from localqwen_medical.training_data import build_medical_dpo

    sizes = sizes or DpoProofSizes()
    start = time.monotonic()
    root = Path(root)
    runs = simulate_runs(root / "audit_log.jsonl", sizes.seed)
    all_rows = read_rows(build_medical_dpo(root / "data", audit_log=str(root / "audit_log.jsonl"), planted=False))
    train, held = split_rows(all_rows, sizes.held_out, sizes.seed)
    (root / "split").mkdir(parents=True, exist_ok=True)
    (root / "split" / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in train), encoding="utf-8")

    corpus = [r["prompt"] for r in all_rows] + [r["chosen"] for r in all_rows] + [r["rejected"] for r in all_rows]
    h = sizes.hidden_size
    base = build_tiny_qwen3(root / "base", corpus=corpus, vocab_size=700, hidden_size=h, intermediate_size=2 * h,
                            num_attention_heads=4, num_key_value_heads=2, head_dim=h // 4, seed=sizes.seed)
    model, processor, _ = load_model_and_processor(base, precision="fp32")
    before = _logprobs(model, processor, held)
    config = parse_job_config({
        "output_dir": str(root / "dpo_run"), "model": {"path": str(base)},
        "data": {"train": str(root / "split" / "train.jsonl")},
        "method": {"name": "lora", "options": {"r": 16, "alpha": 32, "include_mlp": True}},
        "tracking": {"swanlab": "off"},
        "training": {"objective": "dpo", "epochs": sizes.epochs, "batch_size": 8, "learning_rate": sizes.learning_rate,
                     "dpo_beta": sizes.beta, "max_length": 160, "save_steps": 10**6, "logging_steps": 10,
                     "seed": sizes.seed},
    })
    done = run_job(config)
    if done.status != "ok":
        raise RuntimeError(f"DPO job failed: {done.summary}")
    tuned = load_trained(load_model_and_processor(base, precision="fp32")[0], root / "dpo_run" / "final")
    after = _logprobs(tuned, processor, held)
    margins = [sizes.beta * ((ca - cb) - (ra - rb)) for (cb, rb), (ca, ra) in zip(before, after, strict=True)]
    return {
        "runs": runs, "pairs": len(all_rows), "train_pairs": len(train), "held_out_pairs": len(held),
        "preference_accuracy_before": sum(c > r for c, r in before) / len(before),
        "preference_accuracy_after": sum(c > r for c, r in after) / len(after),
        "margin_accuracy": sum(m > 0 for m in margins) / len(margins),
        "mean_margin": sum(margins) / len(margins),
        "seconds": round(time.monotonic() - start, 1),
    }
