"""Plugins' declared needs against simulated machines (the probe is injected, the rules are real),
and the built-in plugins' declarations against the device plan and the training estimate."""

from __future__ import annotations

import pytest

from localqwen.i18n import current_language, set_language
from localqwen.plugin_api import Plugin, PluginHost, Requirements
from localqwen.plugin_fit import plugin_fit
from localqwen.runtime import catalog
from localqwen.runtime.device import DeviceManager
from localqwen.runtime.host import CudaDevice, HostInfo
from localqwen.runtime.model_manager import DEFAULT_MODELS
from localqwen.runtime.plan import ladder

RTX_3070 = CudaDevice(0, "RTX 3070 8GB", 8.0, 7.6, (8, 6))


@pytest.fixture(autouse=True)
def english():
    before = current_language()
    set_language("en")
    yield
    set_language(before)


def host(*, ram_available: float, cuda=(), mps=False) -> HostInfo:
    return HostInfo(cpu_cores=8, ram_total_gb=32.0, ram_available_gb=ram_available, cpu_flags={"avx2"},
                    cuda=list(cuda), mps=mps, llama_cpp=True, bitsandbytes=bool(cuda))


def device(machine: HostInfo, remote_url: str = "") -> DeviceManager:
    return DeviceManager(probe=lambda: machine, remote_url=remote_url)


def refuse_probe() -> HostInfo:
    raise AssertionError("the machine was probed for a plugin that needs nothing from it")


def never_probed(remote_url: str = "") -> DeviceManager:
    return DeviceManager(probe=refuse_probe, remote_url=remote_url)


def plugin(task: str, memory: float = 0.0) -> Plugin:
    class Needy(Plugin):
        id = "needy"
        title = "Needy"
        requirements = Requirements(task=task, min_memory_gb=memory)

    return Needy()


def test_too_little_memory_says_how_much_is_needed_and_available():
    fit = plugin_fit(plugin("text", 6.0), device(host(ram_available=5.1)))
    assert not fit.met
    # 5.1 GB free less the 2 GB the device plan leaves to the OS and the app.
    assert fit.reason == "needs about 6 GB of memory; this machine has 3.1 GB available (RAM)"


def test_enough_memory_is_met_without_a_reason():
    fit = plugin_fit(plugin("vision", 3.0), device(host(ram_available=16.0)))
    assert fit.met and fit.reason == "" and fit.note == ""


def test_a_gpu_with_room_meets_an_inference_need_the_ram_cannot():
    assert plugin_fit(plugin("vision", 6.0), device(host(ram_available=4.0, cuda=[RTX_3070]))).met
    fit = plugin_fit(plugin("vision", 9.0), device(host(ram_available=4.0, cuda=[RTX_3070])))
    assert not fit.met and "7.6 GB available (RTX 3070 8GB)" in fit.reason


def test_apple_shared_memory_counts_for_inference():
    assert plugin_fit(plugin("text", 5.0), device(host(ram_available=7.0, mps=True))).met  # 7 x 0.75 > 7 - 2


def test_training_uses_the_gpu_when_there_is_one_and_says_when_there_is_none():
    small_gpu = CudaDevice(0, "GTX 1050", 2.0, 1.8, (6, 1))
    fit = plugin_fit(plugin("training", 4.0), device(host(ram_available=64.0, cuda=[small_gpu])))
    assert not fit.met and "1.8 GB available (GTX 1050)" in fit.reason and fit.note == ""
    on_cpu = plugin_fit(plugin("training", 4.0), device(host(ram_available=64.0)))
    assert on_cpu.met and "No CUDA GPU" in on_cpu.note
    tight_cpu = plugin_fit(plugin("training", 4.0), device(host(ram_available=5.0)))
    assert not tight_cpu.met and "No CUDA GPU" in tight_cpu.note


def test_needing_nothing_or_a_remote_engine_never_probes_the_machine():
    assert plugin_fit(plugin("none"), never_probed()).met
    remote = never_probed(remote_url="http://127.0.0.1:8000/v1")
    assert plugin_fit(plugin("text", 40.0), remote).met  # the server holds the model
    with pytest.raises(AssertionError, match="probed"):
        plugin_fit(plugin("embedding", 1.0), remote)  # embedders run here even with a remote engine


def test_an_unknown_task_is_reported_not_ignored():
    fit = plugin_fit(plugin("telepathy", 1.0), never_probed())
    assert not fit.met and "unknown task 'telepathy'" in fit.reason and "training" in fit.reason


def test_reason_follows_the_language():
    set_language("zh")
    fit = plugin_fit(plugin("text", 6.0), device(host(ram_available=5.1)))
    assert "需要约 6 GB" in fit.reason and "3.1 GB" in fit.reason


# -- the built-in plugins declare what they really need ------------------------------------------

def builtin_plugins() -> list[Plugin]:
    host_ = PluginHost(third_party=False)
    plugins = host_.load_all()
    assert {p.id for p in plugins} >= {"chat", "captioner", "rag", "trainer"}, host_.failures
    return plugins


def test_builtin_inference_plugins_declare_at_least_what_their_default_model_takes():
    """The least memory the default model of the plugin's task can run in (any backend, any
    device) is the floor; a declaration more than 1.5 GB above it would warn machines that can."""
    roomy = HostInfo(cpu_cores=8, ram_total_gb=512, ram_available_gb=512, cpu_flags={"avx2"},
                     cuda=[CudaDevice(0, "big", 80.0, 80.0, (9, 0))], llama_cpp=True, bitsandbytes=True)
    checked = 0
    for found in builtin_plugins():
        needs = found.requirements
        if needs.task not in ("text", "vision"):
            continue
        model = catalog.get(DEFAULT_MODELS[needs.task]).info()
        least = min(step.estimated_gb for step in ladder(roomy, model, needs.task))
        assert least <= needs.min_memory_gb <= least + 1.5, (found.id, least, needs)
        checked += 1
    assert checked >= 3  # chat, captioner, rag


def test_builtin_trainer_declares_what_lora_on_the_smallest_qwen3_takes():
    transformers = pytest.importorskip("transformers")
    from localqwen.training.estimate import estimate_memory, model_shape

    trainer = next(p for p in builtin_plugins() if p.requirements.task == "training")
    # Qwen3-0.6B's published shape (built on the meta device: no download, no weights).
    qwen3_06b = transformers.Qwen3Config(hidden_size=1024, intermediate_size=3072, num_hidden_layers=28,
                                          num_attention_heads=16, num_key_value_heads=8, head_dim=128,
                                          vocab_size=151936, tie_word_embeddings=True)
    least = estimate_memory(model_shape(qwen3_06b), method="lora", precision="bf16", seq_len=1024,
                            gradient_checkpointing=True, device="cuda").total_gb
    assert least <= trainer.requirements.min_memory_gb <= least + 1.5, (least, trainer.requirements)
