"""Plans on simulated hosts (no GPU here): the probe is injected, the planning code is real."""

from __future__ import annotations

import pytest

from localqwen.runtime import catalog
from localqwen.runtime.device import DeviceManager, is_out_of_memory
from localqwen.runtime.engine.base import Engine
from localqwen.runtime.host import CudaDevice, HostInfo
from localqwen.runtime.plan import ModelInfo, make_plan, next_step


def host(*, ram=32.0, cuda=(), mps=False, flags=("avx2",), llama_cpp=True, bnb=True, cores=8) -> HostInfo:
    return HostInfo(cpu_cores=cores, ram_total_gb=ram, ram_available_gb=ram, cpu_flags=set(flags),
                    cuda=list(cuda), mps=mps, llama_cpp=llama_cpp, bitsandbytes=bnb and bool(cuda))


RTX_3070 = CudaDevice(0, "RTX 3070 8GB", 8.0, 7.6, (8, 6))
RTX_4090 = CudaDevice(0, "RTX 4090 24GB", 24.0, 23.0, (8, 9))
GTX_1080 = CudaDevice(0, "GTX 1080 Ti", 11.0, 10.5, (6, 1))


def vl(size: str) -> ModelInfo:
    return catalog.get(f"qwen3-vl-{size}-instruct").info()


def test_8gb_card_runs_8b_in_nf4_with_double_quant_bf16_compute():
    plan = make_plan(host(cuda=[RTX_3070]), vl("8b"), "vision")
    assert (plan.backend, plan.device, plan.quantization, plan.compute_dtype) == ("transformers", "cuda", "nf4", "bfloat16")
    assert plan.fits and plan.estimated_gb < 7.6
    assert any("double quantization" in reason for reason in plan.reasons)
    assert any("more memory" in reason for reason in plan.reasons)  # says why not bf16


def test_24gb_card_runs_4b_in_bf16_without_quantization():
    plan = make_plan(host(cuda=[RTX_4090]), vl("4b"), "vision")
    assert (plan.device, plan.dtype, plan.quantization) == ("cuda", "bfloat16", None)


def test_old_gpu_without_bf16_uses_float16():
    plan = make_plan(host(cuda=[GTX_1080]), vl("8b"), "vision")
    assert plan.dtype == "float16" and plan.quantization == "nf4" and plan.compute_dtype == "float16"
    assert "no bf16" in plan.explain()


def test_cuda_without_bitsandbytes_advises_installing_it():
    plan = make_plan(host(cuda=[RTX_3070], bnb=False, llama_cpp=False, ram=64), vl("8b"), "vision")
    assert plan.device == "cpu"  # 8B bf16 does not fit in 8 GB and NF4 is unavailable
    ladder_advice = make_plan(host(cuda=[RTX_4090], bnb=False), vl("2b"), "vision").advice
    assert any("bitsandbytes" in tip for tip in ladder_advice)


def test_cpu_with_native_bf16_vs_without():
    model = catalog.get("qwen3-embedding-0.6b").info()  # no GGUF: transformers on CPU
    with_bf16 = make_plan(host(flags=("avx2", "avx512f", "avx512_bf16")), model)
    without = make_plan(host(flags=("avx2", "avx512f")), model)
    assert (with_bf16.dtype, without.dtype) == ("bfloat16", "float32")
    assert "native bf16" in with_bf16.reasons[0] and "no native bf16" in without.reasons[0]


def test_cpu_prefers_gguf_q4_k_m_through_llama_cpp():
    plan = make_plan(host(), vl("4b"), "vision")
    assert (plan.backend, plan.quantization) == ("llama.cpp", "Q4_K_M")
    no_llama = make_plan(host(llama_cpp=False), vl("4b"), "vision")
    assert no_llama.backend == "transformers" and any("llama-cpp-python" in tip for tip in no_llama.advice)


def test_mps_uses_float16_on_shared_memory():
    plan = make_plan(host(mps=True, ram=16), vl("2b"), "vision")
    assert (plan.device, plan.dtype) == ("mps", "float16")


def test_low_ram_says_it_will_not_fit_and_what_would():
    plan = make_plan(host(ram=4.0), vl("8b"), "vision")
    assert not plan.fits
    text = plan.explain()
    assert "will not fit" in text
    assert "qwen3-vl-4b-instruct" in text  # the smaller model
    assert "lower-bit GGUF" in text


def test_vision_task_needs_a_vision_model():
    with pytest.raises(ValueError, match="text model"):
        make_plan(host(), catalog.get("qwen3-4b").info(), "vision")


def test_remote_url_plans_the_remote_backend():
    plan = make_plan(host(), vl("8b"), "vision", remote_url="http://127.0.0.1:8000/v1")
    assert plan.backend == "remote" and plan.fits


def test_ladder_steps_down_after_out_of_memory():
    machine = host(cuda=[RTX_4090])
    first = make_plan(machine, vl("8b"), "vision")
    assert first.quantization is None and first.device == "cuda"
    second = next_step(machine, vl("8b"), first)
    assert second.quantization == "nf4" and "out of memory" in second.reasons[0]
    third = next_step(machine, vl("8b"), second)
    assert third.device == "cpu"


class _Recorder(Engine):
    """A stand-in for a loaded model's memory: records load and close (the GPU is simulated)."""

    backend = "transformers"

    def __init__(self, name: str, log: list[str]) -> None:
        super().__init__()
        self.model_id = name
        self.log = log

    def close(self) -> None:
        self.log.append(f"closed {self.model_id}")


def test_device_manager_falls_back_on_oom_and_evicts_before_loading():
    machine = host(cuda=[RTX_4090])
    probes = []
    manager = DeviceManager(lambda: probes.append(1) or machine)
    assert probes == []  # nothing probed until asked
    log: list[str] = []

    def loader(plan):
        log.append(f"try {plan.label}")
        if plan.quantization is None and plan.device == "cuda":
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return _Recorder("a", log)

    engine = manager.load("a", vl("8b"), "vision", loader)
    assert engine.plan.quantization == "nf4"
    assert log == ["try transformers on cuda (bfloat16)", "try transformers on cuda (nf4)"]
    assert manager.load("a", vl("8b"), "vision", loader) is engine  # reused, not reloaded
    manager.load("b", vl("2b"), "vision", lambda plan: _Recorder("b", log))
    assert "closed a" in log and list(manager.loaded) == ["b"]
    assert probes == [1]


def test_non_memory_errors_are_not_swallowed():
    manager = DeviceManager(lambda: host(cuda=[RTX_4090]))

    def broken(plan):
        raise ValueError("config.json is damaged")

    with pytest.raises(ValueError, match="damaged"):
        manager.load("x", vl("2b"), "vision", broken)
    assert is_out_of_memory(MemoryError()) and not is_out_of_memory(ValueError("x"))


def test_nf4_plan_builds_a_real_bitsandbytes_config():
    import torch

    from localqwen.runtime.engine.transformers_backend import load_kwargs

    plan = make_plan(host(cuda=[RTX_3070]), vl("8b"), "vision")
    kwargs = load_kwargs(plan)
    config = kwargs["quantization_config"]
    assert type(config).__name__ == "BitsAndBytesConfig"
    assert config.load_in_4bit and config.bnb_4bit_quant_type == "nf4" and config.bnb_4bit_use_double_quant
    assert config.bnb_4bit_compute_dtype == torch.bfloat16
    assert kwargs["device_map"] == "auto" and kwargs["trust_remote_code"] is False and kwargs["use_safetensors"]


def test_real_probe_reports_this_machine():
    manager = DeviceManager()
    report = manager.host.to_dict()
    assert report["cpu_cores"] >= 1 and report["ram_total_gb"] > 0
    assert isinstance(report["cuda"], list)
