"""One extension mechanism: what a plugin adds through ``register(extensions)`` (a data source, a
metric, a tool, a CLI shortcut) reaches the trainer, the tool loop and the CLI; a plugin whose hook
fails is reported by name and skipped. Inline plugins through ``PluginHost.add`` for the workbench,
real entry points for the CLI (which builds its own workbench), the real trainer plugin and a tiny
real model for ``localqwen train``."""

from __future__ import annotations

import importlib
import json
import os

import pytest
from install_plugins import SUPPORT_DIR, write_distribution
from localqwen_trainer.plugin import Trainer
from lq_extending_plugin import BrokenHook, Extender, length_ratio
from typer.testing import CliRunner

from localqwen.app import Workbench
from localqwen.cli.main import app
from localqwen.plugin_api import Extensions, Plugin, PluginHost, PluginLoadError
from localqwen.plugin_api import events as ev
from localqwen.runtime.tool_loop import run_tool
from localqwen.training.after import get_metric

runner = CliRunner()


def bench_with(*plugins: type[Plugin]) -> Workbench:
    host = PluginHost(use_entry_points=False)
    for plugin in plugins:
        assert host.add(plugin) is not None, host.failures
    return Workbench.create(host=host)


@pytest.fixture
def installed_extenders(tmp_path, monkeypatch):
    """Extender and BrokenHook as an installed distribution, so the CLI's own workbench finds them."""
    site = tmp_path / "site"
    write_distribution(site, "lq-extending-plugins", {"extender": "lq_extending_plugin:Extender",
                                                      "broken_hook": "lq_extending_plugin:BrokenHook"})
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(SUPPORT_DIR), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("LOCALQWEN_NO_THIRD_PARTY_PLUGINS", "0")
    importlib.invalidate_caches()


def test_register_gathers_each_kind_next_to_the_builtins():
    extensions = bench_with(Extender).extensions
    assert set(extensions.data_sources) == {"synthetic-shapes", "tiny-qa"}
    assert extensions.data_sources["tiny-qa"].plugin_id == "extender"
    assert extensions.data_sources["synthetic-shapes"].plugin_id == ""
    assert set(extensions.metrics) == {"exact_match", "length-ratio"}
    assert set(extensions.tools) == {"shout"}
    shortcut = extensions.shortcuts["ext"]
    assert (shortcut.plugin_id, shortcut.subcommands()) == ("extender", {"greet": "ext-greet"})
    assert extensions.added_by("extender") == {"data_sources": ["tiny-qa"], "metrics": ["length-ratio"],
                                               "tools": ["shout"], "shortcuts": ["ext"]}
    # No module-level registry: a second workbench without the plugin sees none of it.
    assert set(bench_with(Trainer).extensions.data_sources) == {"synthetic-shapes"}


def test_a_plugin_whose_register_raises_is_reported_by_name_and_skipped():
    bench = bench_with(Extender, BrokenHook)
    extensions = bench.extensions
    failure = bench.host.failures["broken_hook"]
    assert "register() failed: RuntimeError: no frobnicator for the hook" in failure.reason
    assert "half-registered" not in extensions.metrics  # what it added before raising is dropped
    assert "length-ratio" in extensions.metrics  # the others keep theirs
    with pytest.raises(PluginLoadError, match="broken_hook"):
        bench.host.get("broken_hook")
    assert [p.id for p in bench.host.load_all()] == ["extender"]


def test_registration_mistakes_fail_the_plugin_with_the_reason():
    class Clash(Extender):
        id = "clash"

        def register(self, extensions: Extensions) -> None:
            extensions.add_data_source("synthetic-shapes", "Mine now", lambda out_dir: out_dir)

    class WrongShortcut(Extender):
        id = "wrong_shortcut"

        def register(self, extensions: Extensions) -> None:
            extensions.add_shortcut("wrong", "Points nowhere", actions=("no-such-action",))

    class NotATool(Extender):
        id = "not_a_tool"

        def register(self, extensions: Extensions) -> None:
            extensions.add_tool(length_ratio)

    class SecondExtender(Extender):
        id = "second_extender"

    bench = bench_with(Extender, Clash, WrongShortcut, NotATool, SecondExtender)
    bench.extensions  # noqa: B018 - gathering them is what records the failures
    reasons = {name: failure.reason for name, failure in bench.host.failures.items()}
    assert "data source 'synthetic-shapes' is already registered by LocalQwen itself" in reasons["clash"]
    assert "no action 'no-such-action' (actions: ext-greet)" in reasons["wrong_shortcut"]
    assert "add_tool takes a localqwen.runtime.tool_loop.Tool, not function" in reasons["not_a_tool"]
    assert "data source 'tiny-qa' is already registered by plugin 'extender'" in reasons["second_extender"]
    assert "extender" not in reasons


def test_the_data_source_and_metric_reach_the_trainer_wizard(tiny_qwen3_path):
    bench = bench_with(Trainer, Extender)
    assert list(bench.run("trainer", "model", {"model": str(tiny_qwen3_path)}))[-1].status == "ok"
    events = list(bench.run("trainer", "data", {"source": "tiny-qa", "source_options": '{"n": 9}', "preview": 0}))
    sources = next(e for e in events if isinstance(e, ev.Table) and e.title == "Data sources")
    assert ["tiny-qa", "Tiny number words", "extender"] in sources.rows
    assert ["synthetic-shapes", "Synthetic coloured shapes (image captions)", "built-in"] in sources.rows
    done = events[-1]
    assert done.status == "ok", events
    status = list(bench.run("trainer", "status", {}))[-1]
    assert status.result["next_step"] == "method"
    # The evaluate step picks its metric from the same registries, through the context.
    metrics = bench.context("trainer").extensions.metrics
    assert get_metric(metrics, "length-ratio")(["ab"], ["abcd"]) == {"length_ratio": 0.5}
    with pytest.raises(KeyError, match="unknown metric 'bleu'.*exact_match, length-ratio"):
        get_metric(metrics, "bleu")


def test_the_tool_reaches_the_tool_loop():
    tools = bench_with(Extender).context("extender").extensions.tools
    run = run_tool(tools, "shout", {"text": "hi"})
    assert run.ok and run.result == "HI"


def test_a_shortcut_runs_the_action_like_run(installed_extenders):
    short = runner.invoke(app, ["ext", "greet", "--name", "Ada", "--times", "2", "--json"])
    long = runner.invoke(app, ["run", "extender", "ext-greet", "--name", "Ada", "--times", "2", "--json"])
    assert short.exit_code == long.exit_code == 0, short.output
    assert [json.loads(line)["kind"] for line in short.output.splitlines()] == ["text", "text", "done"]
    assert json.loads(short.output.splitlines()[-1])["result"] == {"greeted": "Ada", "times": 2}
    strip = [{k: v for k, v in json.loads(line).items() if k != "elapsed_s"} for line in short.output.splitlines()]
    assert strip == [{k: v for k, v in json.loads(line).items() if k != "elapsed_s"} for line in long.output.splitlines()]
    # Options come from the form, as for `run`; bad input exits 2 naming the field.
    helped = runner.invoke(app, ["ext", "greet", "--help"])
    assert helped.exit_code == 0 and "--name" in helped.output and "localqwen ext greet" in helped.output
    assert "greet" in runner.invoke(app, ["ext", "--help"]).output
    bad = runner.invoke(app, ["ext", "greet", "--name", "Ada", "--times", "9"])
    assert bad.exit_code == 2 and "--times" in bad.output


def test_cli_reports_a_broken_hook_and_lists_what_plugins_add(installed_extenders):
    rows = {row["id"]: row for row in json.loads(runner.invoke(app, ["plugins", "--json"]).output)}
    assert rows["broken_hook"]["status"] == "failed" and "no frobnicator" in rows["broken_hook"]["error"]
    assert rows["extender"]["adds"]["shortcuts"] == ["ext"]
    assert rows["captioner"]["adds"] == {"data_sources": ["coco-captions"], "metrics": ["caption"],
                                         "shortcuts": ["coco"]}
    unknown = runner.invoke(app, ["nope"])
    assert unknown.exit_code == 2 and "No such command 'nope'" in unknown.output
    assert "plugin 'broken_hook' skipped: register() failed" in unknown.output


def test_help_lists_builtins_without_loading_plugins(installed_extenders):
    import sys

    sys.modules.pop("lq_extending_plugin", None)
    result = runner.invoke(app, ["--help"])
    text = " ".join(result.output.split())
    assert result.exit_code == 0 and "train" in text and "`localqwen plugins` lists them" in text
    assert "lq_extending_plugin" not in sys.modules  # shortcuts are looked up only for unknown names


def test_localqwen_train_builds_a_plugin_data_source(installed_extenders, tmp_path, tiny_qwen3_path):
    job = tmp_path / "job.toml"
    job.write_text(f'output_dir = "out"\n[model]\npath = "{tiny_qwen3_path}"\n'
                   '[data.source]\nname = "tiny-qa"\noptions = {n = 8}\n'
                   '[method]\nname = "full"\n[training]\nmax_steps = 2\nbatch_size = 4\n[tracking]\nswanlab = "off"\n')
    estimate = runner.invoke(app, ["train", str(job), "--estimate-only", "--warmup-steps", "1", "--json"])
    assert estimate.exit_code == 0, estimate.output
    assert not (tmp_path / "out").exists()  # the estimate built the source in a scratch folder
    result = runner.invoke(app, ["train", str(job), "--json"])
    assert result.exit_code == 0, result.output
    assert len((tmp_path / "out" / "data" / "train.jsonl").read_text().splitlines()) == 8
    # The plugin whose hook fails is named, and the job runs anyway.
    assert "plugin 'broken_hook' skipped" in result.output
