"""What the models & device screens of both frontends show, read from the runtime services.

Frontends call these helpers instead of the runtime directly, so a runtime that is missing,
still being set up or raising gives a clear message (:class:`RuntimeUnavailable`), never a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localqwen.i18n import t
from localqwen.plugin_api import CancelToken
from localqwen.plugin_api import events as ev

if TYPE_CHECKING:
    from localqwen.services import Services


class RuntimeUnavailable(RuntimeError):
    """The runtime service could not answer; the message says why, for the user."""


@dataclass
class ModelEntry:
    model_id: str
    title: str
    kind: str
    present: bool
    detail: str = ""


def _service(services: Services, name: str) -> Any:
    try:
        return getattr(services, name)
    except AttributeError:
        raise RuntimeUnavailable(t("models.service_missing", name=name)) from None
    except Exception as exc:
        raise RuntimeUnavailable(t("models.service_failed", name=name, error=f"{type(exc).__name__}: {exc}")) from exc


def device_report(services: Services) -> str:
    """A Markdown description of the machine, the loaded models, and how each catalog model would run."""
    manager = _service(services, "device")
    try:
        host = manager.host
        lines = [f"**{t('models.system')}**: {host.system or '?'} · {host.cpu_cores} {t('models.cores')} · "
                 f"RAM {host.ram_available_gb:.1f} / {host.ram_total_gb:.1f} GB"]
        for gpu in host.cuda:
            lines.append(f"- CUDA {gpu.index}: {gpu.name}, {gpu.free_gb:.1f} / {gpu.total_gb:.1f} GB, "
                         f"sm {gpu.capability_str}, bf16 {'✓' if gpu.bf16 else '✗'}")
        if host.mps:
            lines.append("- Apple MPS ✓")
        if not host.cuda and not host.mps:
            lines.append(f"- {t('models.cpu_only')}")
        lines.append(f"- llama.cpp {'✓' if host.llama_cpp else '✗'} · bitsandbytes {'✓' if host.bitsandbytes else '✗'}")
        loaded = manager.loaded
        lines.append("")
        lines.append(f"**{t('models.loaded')}**: " + (", ".join(loaded) if loaded else t("models.none_loaded")))
        for info in _catalog_infos(services):
            plan = manager.plan(info, "vision" if getattr(info, "vision", False) else "text")
            lines.append("")
            lines.append("```\n" + plan.explain() + "\n```")
        return "\n".join(lines)
    except RuntimeUnavailable:
        raise
    except Exception as exc:
        raise RuntimeUnavailable(t("models.service_failed", name="device", error=f"{type(exc).__name__}: {exc}")) from exc


def _catalog_infos(services: Services) -> list[Any]:
    """ModelInfo of each chat model in the catalog, if a model manager exposes them."""
    try:
        manager = services.models  # type: ignore[attr-defined]
    except Exception:
        return []
    for name in ("model_infos", "infos"):
        method = getattr(manager, name, None)
        if callable(method):
            try:
                return [i for i in method() if getattr(i, "kind", "chat") == "chat"]
            except Exception:
                return []
    return []


def model_entries(services: Services) -> list[ModelEntry]:
    """The catalog with what is already on disk."""
    manager = _service(services, "models")
    try:
        entries = manager.entries() if hasattr(manager, "entries") else manager.catalog()
        rows = []
        for entry in entries:
            model_id = getattr(entry, "model_id", None) or getattr(entry, "id", "")
            present = entry.present if hasattr(entry, "present") else bool(manager.is_present(model_id))
            rows.append(ModelEntry(model_id=model_id, title=getattr(entry, "title", "") or model_id,
                                   kind=getattr(entry, "kind", "chat"), present=present,
                                   detail=getattr(entry, "description", "")))
        return rows
    except Exception as exc:
        raise RuntimeUnavailable(t("models.service_failed", name="models", error=f"{type(exc).__name__}: {exc}")) from exc


def download_events(services: Services, model_id: str, cancel: CancelToken) -> Iterator[Any]:
    """Download one catalog model, yielding Progress events (run it as a job)."""
    manager = _service(services, "models")
    start = ev.Step(step="download", title=t("models.downloading", model=model_id))
    yield start
    result = manager.download(model_id, cancel=cancel)
    if hasattr(result, "__iter__") and not isinstance(result, (str, bytes)) and not hasattr(result, "exists"):
        for event in result:
            yield event
            cancel.raise_if_cancelled()
    yield ev.Step(step="download", title=t("models.downloading", model=model_id), status="finished")
    yield ev.Done(summary=t("models.downloaded", model=model_id))
