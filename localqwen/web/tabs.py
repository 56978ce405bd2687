"""The web view's models, jobs and settings tabs."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from localqwen.app import Workbench
from localqwen.i18n import LANGUAGES, t
from localqwen.runtime_info import (
    RuntimeUnavailable,
    already_downloading,
    check_model_choice,
    device_report,
    download_events,
    model_choices,
    model_entries,
    model_targets,
)

JOBS_REFRESH_S = 2.0


def _models_table(bench: Workbench) -> tuple[dict[str, Any], str, list[str]]:
    try:
        entries = model_entries(bench.services)
        problem = ""
    except RuntimeUnavailable as exc:
        entries, problem = [], f"⚠️ {exc}"
    table = {"headers": [t("models.col_model"), t("models.col_kind"), t("models.col_present"), ""],
             "data": [[e.title, e.kind, "✓" if e.present else "—", e.detail] for e in entries]}
    return table, problem, [e.model_id for e in entries]


def _device(bench: Workbench) -> str:
    try:
        return device_report(bench.services)
    except RuntimeUnavailable as exc:
        return f"⚠️ {exc}"


def models_tab(bench: Workbench, blocks: Any) -> None:
    import gradio as gr

    table, problem, model_ids = _models_table(bench)
    gr.Markdown(f"### {t('models.device')}")
    # Probing the machine can take seconds (it may import torch): done when the page loads.
    device = gr.Markdown(t("home.loading"), elem_id="device-report")
    blocks.load(lambda: _device(bench), outputs=[device], show_progress="hidden")
    gr.Markdown(f"### {t('models.catalog')}")
    problem_md = gr.Markdown(problem, elem_id="models-problem")
    models = gr.Dataframe(value=table, interactive=False, elem_id="models-table")
    with gr.Row():
        choice = gr.Dropdown(choices=model_ids, label=t("models.col_model"), elem_id="download-model")
        download = gr.Button(t("models.download"), variant="primary", elem_id="download-button")
        refresh = gr.Button(t("models.refresh"))
    download_status = gr.Markdown("")

    def start_download(model_id: str | None) -> str:
        if not model_id:
            return t("models.nothing_selected")
        services = bench.services
        busy = already_downloading(services, model_id)
        if busy:
            return busy
        job = services.jobs.start_stream(t("models.downloading", model=model_id),
                                         lambda cancel: download_events(services, model_id, cancel))
        return t("models.download_started", model=model_id) + f" (`{job.id}`)"

    def reload() -> tuple[Any, ...]:
        new_table, new_problem, ids = _models_table(bench)
        return _device(bench), new_problem, new_table, gr.update(choices=ids)

    download.click(start_download, inputs=[choice], outputs=[download_status], api_name="models_download")
    refresh.click(reload, outputs=[device, problem_md, models, choice], api_name="models_refresh")

    gr.Markdown(f"### {t('models.per_plugin')}\n{t('models.per_plugin_help')}\n\n{t('models.custom_hint')}")
    for section, title in model_targets(bench.host.load_all()):
        current = str(bench.config.plugin_section(section).get("model") or "")
        # Catalog ids, models in the hub caches (by path), or a folder / .gguf typed in (a browser
        # cannot browse the server's disk; the path is checked before it is saved).
        with gr.Row():
            picker = gr.Dropdown(choices=[(t("models.default_model"), "")] + model_choices(bench.services, current),
                                 value=current, label=title, allow_custom_value=True, elem_id=f"model-for-{section}")
            saved = gr.Markdown("", elem_id=f"model-saved-{section}")
        picker.change(_save_model(bench, section), inputs=[picker], outputs=[saved],
                      api_name=f"model_for_{section}")


def _save_model(bench: Workbench, section: str):
    def save(model: str | None) -> str:
        model = (model or "").strip()
        if bench.config.plugin_section(section).get("model", "") == model:
            return ""
        problem = check_model_choice(bench.services, model)
        if problem:
            return f"⚠️ {problem}"
        try:
            bench.set_config(f"plugins.{section}", "model", model)
        except Exception as exc:
            return f"⚠️ {t('settings.save_failed', error=str(exc))}"
        return t("models.model_saved", target=section, model=model or t("models.default_model"))

    return save


def jobs_rows(bench: Workbench) -> dict[str, Any]:
    jobs = bench.services.jobs
    rows = []
    for record in jobs.list():
        live = jobs.get(record.id)
        fraction = live.fraction if live is not None else record.progress
        status = live.status if live is not None else record.status
        rows.append([record.id, record.title, t(f"status.{status}"),
                     "" if fraction is None else f"{fraction * 100:.0f}%",
                     time.strftime("%m-%d %H:%M:%S", time.localtime(record.created_at)),
                     (live.message if live is not None else record.message) or record.summary])
    headers = ["id", t("jobs.col_title"), t("jobs.col_status"), t("jobs.col_progress"), t("jobs.col_started"),
               t("jobs.col_message")]
    return {"headers": headers, "data": rows}


def jobs_tab(bench: Workbench) -> None:
    import gradio as gr

    from localqwen.web.event_renderer import RunView, follow_job
    from localqwen.web.files import allowed_paths

    gr.Markdown(f"### {t('jobs.title')}\n{t('jobs.help_web')}")
    table = gr.Dataframe(value=lambda: jobs_rows(bench), interactive=False, elem_id="jobs-table")
    timer = gr.Timer(JOBS_REFRESH_S)
    timer.tick(lambda: jobs_rows(bench), outputs=[table], show_progress="hidden")
    with gr.Row():
        job_id = gr.Textbox(label=t("jobs.select"), placeholder="20260101-120000-abcdef", elem_id="job-id")
        open_button = gr.Button(t("jobs.open"), variant="primary", elem_id="job-open")
        cancel = gr.Button(t("jobs.cancel"), variant="stop", elem_id="job-cancel")
        forget = gr.Button(t("jobs.forget"))
    status = gr.Markdown("", elem_id="job-status")
    progress = gr.HTML("")
    output = gr.Markdown("", elem_id="job-output")

    def select(event: gr.SelectData) -> str:
        row = getattr(event, "row_value", None)
        return str(row[0]) if row else ""

    select.__annotations__["event"] = gr.SelectData  # resolved here: Gradio reads it to pass the event

    def open_job(selected: str) -> Iterator[tuple[str, str, str]]:
        selected = (selected or "").strip()
        jobs = bench.services.jobs
        live = jobs.get(selected)
        roots = allowed_paths(bench.paths)
        if live is not None:
            yield from follow_job(live, roots, lambda v: (v.status(), v.progress_html(), v.markdown()))
            return
        try:
            events = jobs.events(selected)
        except KeyError as exc:
            yield f"⚠️ {exc.args[0]}", "", ""
            return
        view = RunView(allowed_roots=roots)
        for item in events:
            view.add(item)
        yield view.status(), view.progress_html(), view.markdown()

    def cancel_job(selected: str) -> str:
        return f"⏹ {t('action.cancelling')}" if bench.services.jobs.cancel((selected or "").strip()) else t("web.no_job")

    def forget_finished() -> tuple[str, Any]:
        removed = bench.services.jobs.forget_finished()
        return t("jobs.forgotten", count=removed), jobs_rows(bench)

    table.select(select, outputs=[job_id])
    open_button.click(open_job, inputs=[job_id], outputs=[status, progress, output], api_name="job_open")
    cancel.click(cancel_job, inputs=[job_id], outputs=[status], api_name="job_cancel")
    forget.click(forget_finished, outputs=[status, table], api_name="jobs_forget")


def settings_tab(bench: Workbench) -> None:
    import gradio as gr

    choices = [(t("settings.language_auto"), "auto")] + [(name, code) for code, name in LANGUAGES.items()]
    gr.Markdown(f"### {t('settings.title')}")
    language = gr.Dropdown(choices=choices, value=bench.config.app.language, label=t("settings.language"),
                           elem_id="settings-language")
    saved = gr.Markdown("")
    gr.Markdown(f"**{t('settings.config_file')}**: `{bench.paths.config_file}`\n\n"
                f"**{t('settings.data_folder')}**: `{bench.paths.data_dir}`")

    def save(value: str) -> str:
        if value == bench.config.app.language:
            return ""
        try:
            bench.set_config("app", "language", value)
        except Exception as exc:
            return f"⚠️ {t('settings.save_failed', error=str(exc))}"
        return t("settings.reload_web")

    language.change(save, inputs=[language], outputs=[saved], api_name="settings_language")
