"""What a user of ``localqwen run rag ask`` sees: a failure grade with its reason and exit status 1,
an off-topic question refused as "not in your documents" (exit 0), and no library noise from the
model loads (real CLI through Typer's runner, the real tiny Qwen3, MiniLM, LanceDB, SQLite)."""

from __future__ import annotations

import logging

import pytest
from rag_helpers import docs_folder
from typer.testing import CliRunner

from localqwen.cli.main import app
from localqwen.retrieval.quiet import quiet_loading

NOISE = ("Loading weights", "FutureWarning", "gemm_4bit_forward")


def _output(result) -> str:
    try:
        return result.output + (result.stderr or "")
    except ValueError:  # older click: stderr mixed into output
        return result.output


@pytest.mark.slow  # ingests three documents and runs two asks through the CLI (~30 s here)
def test_cli_ask_shows_the_failure_reason_exits_1_and_refuses_off_topic(tmp_path, tiny_qwen3_path):
    from localqwen.app import Workbench

    bench = Workbench.create()
    bench.paths.config_dir.mkdir(parents=True, exist_ok=True)
    bench.paths.config_file.write_text(f'[plugins.rag]\nallowed_roots = ["{tmp_path}"]\nmodel = "{tiny_qwen3_path}"\n',
                                       encoding="utf-8")
    runner = CliRunner()
    added = runner.invoke(app, ["run", "rag", "add-documents", "--paths", str(docs_folder(tmp_path))])
    assert added.exit_code == 0, _output(added)

    graded = runner.invoke(app, ["run", "rag", "ask", "--question", "What is the most common side effect of statins?",
                                 "--topology", "single", "--max-new-tokens", "16"])
    shown = _output(graded)
    # The tiny random model's answer rests on nothing in the passages: said, with why, and exit 1.
    assert graded.exit_code == 1, shown
    assert "single: failure: " in shown and "Not a grounded answer: " in shown
    assert not [noise for noise in NOISE if noise in shown]

    refused = runner.invoke(app, ["run", "rag", "ask", "--question", "Who won the 2018 FIFA World Cup?",
                                  "--max-new-tokens", "16"])
    shown = _output(refused)
    assert refused.exit_code == 0, shown
    assert "This is not in your documents" in shown and "single: not in your documents" in shown


def test_quiet_loading_silences_our_loads_only_and_restores_everything(tiny_qwen3_path, capfd):
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
    assert "Loading weights" in capfd.readouterr().err  # the noise exists, so the check below can fail

    before = {name: logging.getLogger(name).level for name in ("transformers", "bitsandbytes")}
    with quiet_loading():
        AutoModelForCausalLM.from_pretrained(tiny_qwen3_path)
        assert not logging.getLogger("bitsandbytes.backends.cpu.ops").isEnabledFor(logging.WARNING)
    assert not [noise for noise in NOISE if noise in capfd.readouterr().err]
    # Outside our loads the user's settings are as they were.
    assert {name: logging.getLogger(name).level for name in before} == before
    assert hf_logging.is_progress_bar_enabled()
    assert logging.getLogger("bitsandbytes.backends.cpu.ops").isEnabledFor(logging.WARNING)
