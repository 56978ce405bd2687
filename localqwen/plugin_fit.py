"""Does this machine meet a plugin's needs? Its declared ``Requirements`` against the host the
device manager probed; both home screens mark a plugin whose needs are not met, with the reason.

Asking the device manager for the host probes the machine, which imports torch (seconds): the
frontends call this after their first frame or page, never before. A plugin that needs nothing
(task ``none``, no memory) is answered without probing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from localqwen.i18n import t
from localqwen.runtime.plan import MPS_SHARE, usable_ram_gb

if TYPE_CHECKING:
    from localqwen.plugin_api import Plugin
    from localqwen.runtime.device import DeviceManager
    from localqwen.runtime.host import HostInfo

TASKS = ("text", "vision", "embedding", "training", "none")
# Tasks whose model the chat engine runs, which may be a remote server (runtime.remote_url).
ENGINE_TASKS = ("text", "vision")


@dataclass(frozen=True)
class PluginFit:
    met: bool
    reason: str = ""  # why the needs are not met, for the user
    note: str = ""  # met, but worth knowing (training without a CUDA GPU)


def plugin_fit(plugin: Plugin, device: DeviceManager) -> PluginFit:
    """Whether ``plugin``'s declared needs are met on the machine ``device`` describes, and if not why."""
    needs = plugin.requirements
    if needs.task not in TASKS:
        return PluginFit(False, t("fit.unknown_task", task=needs.task, known=", ".join(TASKS)))
    if needs.task == "none" and needs.min_memory_gb <= 0:
        return PluginFit(True)
    if needs.task in ENGINE_TASKS and device.remote_url:
        return PluginFit(True)  # the model runs on the server; this machine holds no weights
    host = device.host
    note = t("fit.training_on_cpu") if needs.task == "training" and not host.cuda else ""
    available, where = usable_memory(host, needs.task)
    if needs.min_memory_gb > available:
        return PluginFit(False, t("fit.memory", need=f"{needs.min_memory_gb:g}", available=f"{available:.1f}",
                                  where=where), note)
    return PluginFit(True, note=note)


def usable_memory(host: HostInfo, task: str) -> tuple[float, str]:
    """(GB, where) the most a plugin of ``task`` can use here, counted as the device plan counts it:
    free GPU memory, Apple's shared memory, or RAM less what the OS and the app keep. Training runs
    on the CUDA GPU when there is one, else on the CPU; inference takes whichever is largest."""
    ram = (usable_ram_gb(host), t("fit.where_ram"))
    gpu = host.best_cuda()
    if task == "training":
        return (gpu.free_gb, gpu.name) if gpu is not None else ram
    options = [ram]
    if gpu is not None:
        options.append((gpu.free_gb, gpu.name))
    if host.mps:
        options.append((host.ram_available_gb * MPS_SHARE, "Apple MPS"))
    return max(options, key=lambda option: option[0])


def plugin_fits(plugins: list[Plugin], device: DeviceManager) -> dict[str, PluginFit]:
    """Each plugin's fit by id; empty when the machine cannot be probed (the models screens of
    both frontends show that error, so the home screens just mark nothing)."""
    try:
        return {plugin.id: plugin_fit(plugin, device) for plugin in plugins}
    except Exception:
        return {}
