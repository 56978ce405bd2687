"""The short version of bench/bench_memory_write_search.py: on one real LoCoMo conversation with real
MiniLM vectors, the extended index recalls what the rebuilt one does, cycle by cycle (the bench
exits with an error where they differ)."""

from __future__ import annotations

import pytest
from bench_scripts import bench_script
from localqwen_memory.locomo_eval import default_data, load


@pytest.mark.slow
def test_a_persona_extended_by_each_write_recalls_as_one_rebuilt(tmp_path):
    if not default_data().exists():
        pytest.skip(f"LoCoMo data absent: {default_data()}")
    result = bench_script("bench_memory_write_search").measure(load(default_data()), 1, 4, tmp_path / "vectors")
    assert result["same_recall"] and result["memories"] == 419
    assert result["rebuild"]["median_ms"] > 0 and result["extend"]["median_ms"] > 0
