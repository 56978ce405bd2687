"""Consolidation: memories learnt into the model (a LoRA adapter plus a memory head), recalled
with the ``<recall>`` / ``<|memory_pad|>`` tokens, hot-swapped into the running engine.

One job per module: special_tokens, paraphrase, memory_head, rows, train, token_recall, swap,
job, consolidation_eval (and synthetic, the made-up facts and general rows the proof uses)."""
