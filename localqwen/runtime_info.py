"""What the models & device screens of both frontends show, read from the runtime services.

Frontends call these helpers instead of the runtime directly, so a runtime that is missing,
still being set up or raising gives a clear message (:class:`RuntimeUnavailable`), never a crash.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from localqwen.i18n import t
from localqwen.vocabulary import events as ev
from localqwen.vocabulary.cancel import CancelToken

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
    """Markdown: the machine, the loaded models, and how each catalog chat model would run here."""
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
        lines += ["", f"**{t('models.loaded')}**: " + (", ".join(loaded) if loaded else t("models.none_loaded"))]
        plans = [manager.plan(info, "vision" if info.vision else "text") for info in _catalog_infos()]
        if plans:
            lines += ["", f"| {t('models.col_model')} | {t('models.col_plan')} | GB | {t('models.col_fits')} |",
                      "|---|---|---|---|"]
            for plan in plans:
                why = "; ".join(plan.reasons[:1] + plan.advice[:1])
                lines.append(f"| {plan.model_id} | {plan.label} — {why} | {plan.estimated_gb:.1f} / "
                             f"{plan.available_gb:.1f} | {'✓' if plan.fits else '✗'} |")
        return "\n".join(lines)
    except RuntimeUnavailable:
        raise
    except Exception as exc:
        raise RuntimeUnavailable(t("models.service_failed", name="device", error=f"{type(exc).__name__}: {exc}")) from exc


def _catalog_infos() -> list[Any]:
    """Planning info of each chat model in the runtime's catalog."""
    try:
        from localqwen.runtime import catalog
    except ImportError:
        return []
    return [entry.info() for entry in catalog.CATALOG if entry.kind == "chat"]


def model_entries(services: Services) -> list[ModelEntry]:
    """The catalog with what is already on disk."""
    manager = _service(services, "models")
    try:
        return [ModelEntry(model_id=row["id"], title=row.get("title") or row["id"],
                           kind=("vision" if row.get("vision") else row.get("kind", "chat")),
                           present=row.get("status") in ("downloaded", "bundled"),
                           detail=f"{row.get('size_gb', 0):.1f} GB · {row.get('status', '')}")
                for row in manager.list_models()]
    except Exception as exc:
        raise RuntimeUnavailable(t("models.service_failed", name="models", error=f"{type(exc).__name__}: {exc}")) from exc


def already_downloading(services: Services, model_id: str) -> str:
    """What to tell a user who asks to download ``model_id`` while another job, tab or process is
    downloading it ("" when nobody is): said on the spot, not as a job that fails at once."""
    holder = _service(services, "models").downloading(model_id)
    return t("models.already_downloading", model=model_id, holder=holder) if holder else ""


def download_events(services: Services, model_id: str, cancel: CancelToken) -> Iterator[Any]:
    """Download one catalog model, yielding Progress events (run it as a job).

    The model manager reports bytes through a callback from its own thread; the download runs
    in a helper thread and its reports are handed over through a queue."""
    import queue
    import threading

    manager = _service(services, "models")
    updates: queue.Queue[Any] = queue.Queue()
    tracker = ev.ProgressTracker(None, unit="MB", task="download", message=model_id)

    def report(done: float, total: float | None, message: str) -> None:
        tracker.total = total / 1e6 if total else None
        updates.put(tracker.update(done / 1e6, message or model_id))

    def work() -> None:
        try:
            resolved = manager.download(model_id, progress=report, cancel=cancel)
            updates.put(("done", resolved))
        except BaseException as exc:  # handed to the generator, which raises it in the job
            updates.put(("error", exc))

    yield ev.Step(step="download", title=t("models.downloading", model=model_id))
    threading.Thread(target=work, name=f"download-{model_id}", daemon=True).start()
    while True:
        item = updates.get()
        if isinstance(item, tuple):
            kind, value = item
            if kind == "error":
                raise value
            yield ev.Step(step="download", title=t("models.downloading", model=model_id), status="finished")
            path = getattr(value, "path", "")
            yield ev.Done(summary=t("models.downloaded", model=model_id), result={"path": str(path)})
            return
        yield item


def model_targets(plugins: list[Any]) -> list[tuple[str, str]]:
    """(plugin id, title) for the "which model each plugin uses" pickers, the plain chat first.

    The chat model is the ``chat`` plugin's own ``[plugins.chat] model`` setting, like any plugin's."""
    from localqwen.conversations import DEFAULT_CHAT_PLUGIN

    ordered = sorted(plugins, key=lambda plugin: plugin.id != DEFAULT_CHAT_PLUGIN)  # stable: others keep their order
    return [(plugin.id, plugin.title) for plugin in ordered]


def model_choices(services: Services, current: str = "") -> list[tuple[str, str]]:
    """What a "which model" picker offers, as (label, value): the catalog's chat and vision models
    (by id), then models found in the Hugging Face / ModelScope caches (by path), then ``current``
    when it is none of these (a folder or .gguf the user chose)."""
    from localqwen.runtime import catalog
    from localqwen.runtime.hub_cache import cached_models

    choices = [(f"{entry.title} · {entry.id}", entry.id) for entry in catalog.CATALOG if entry.kind == "chat"]
    try:
        cached = cached_models(generative_only=True)
    except OSError:  # an unreadable cache folder only costs its entries
        cached = []
    choices += [(f"{model.label} · {t('models.from_cache')}", str(model.path)) for model in cached]
    if current and current not in {value for _, value in choices}:
        choices.append((current, current))
    return choices


def check_model_choice(services: Services, value: str) -> str:
    """"" when ``value`` can be a plugin's model (empty, a catalog id, a hub repo, or a folder /
    .gguf that passes the model file checks), else what is wrong with it, for the user."""
    from pathlib import Path

    from localqwen.runtime import catalog

    value = value.strip()
    if not value or catalog.find(value) is not None:
        return ""
    looks_like_path = value.startswith((".", "/", "~")) or value.endswith(".gguf") or Path(value).expanduser().exists()
    if not looks_like_path:
        return "" if value.count("/") == 1 else t("models.unknown_model", model=value)
    try:
        _service(services, "models").local(Path(value))
    except Exception as exc:  # ModelFileError and friends: their message says what to fix
        return str(exc)
    return ""
