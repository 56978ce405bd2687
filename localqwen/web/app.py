"""Builds the LocalQwen ``gr.Blocks``: home, one tab per plugin (generated from its forms), chat,
models, jobs and settings.

Call :func:`prepare_environment` before the first ``import gradio`` (``server.launch`` does):
Gradio reads ``GRADIO_TEMP_DIR`` at import, and that folder must be the app's own cache.
Runs go through the shared :class:`JobManager`, so closing the tab does not stop them; the jobs
tab reopens them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localqwen.app import Workbench
from localqwen.frontend_hooks import view_hook
from localqwen.i18n import set_language, t
from localqwen.plugin_api import Action, FormError, Plugin
from localqwen.plugin_fit import PluginFit, plugin_fits
from localqwen.web.event_renderer import RunView, follow_job
from localqwen.web.files import allowed_paths, gradio_temp_dir, prepare_environment
from localqwen.web.form_renderer import collect_values, error_updates, render_form

WEB_CSS = """
.lq-progress { margin: 4px 0; }
.lq-progress-track { background: var(--neutral-200); border-radius: 4px; height: 10px; }
.lq-progress-fill { background: var(--color-accent); border-radius: 4px; height: 10px; transition: width .2s; }
.lq-field-error { color: var(--error-text-color); }
"""


@dataclass
class WebApp:
    """The built Blocks plus the handlers, so tests can call them without a browser."""

    bench: Workbench
    blocks: Any = None
    actions: dict[str, ActionPanel] = field(default_factory=dict)
    chat: Any = None
    wizards: dict[str, Any] = field(default_factory=dict)  # plugin id -> its guided flow's tab (wizard_tab.py)

    @property
    def upload_roots(self) -> list[Path]:
        return [gradio_temp_dir(self.bench.paths), self.bench.paths.uploads_dir]


@dataclass
class ActionPanel:
    """One action's components and handlers."""

    web: WebApp
    plugin: Plugin
    action: Action
    fields: list[Any] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.plugin.id}-{self.action.id}"

    def run(self, *raw: Any) -> Iterator[list[Any]]:
        """Validate, start the job, then stream its events into the output components."""
        bench = self.web.bench
        try:
            values = collect_values(self.fields, list(raw), self.web.upload_roots)
            job = bench.start_action(self.plugin.id, self.action.id, values)
        except FormError as exc:
            known = {f.spec.name for f in self.fields}
            other = "; ".join(f"{k}: {v}" for k, v in exc.errors.items() if k not in known)
            yield self._frame("", RunView(), form_error=other or None,
                              field_errors=error_updates(self.fields, exc.errors), status=f"❌ {t('form.fix_errors', count=len(exc.errors))}")
            return
        except ValueError as exc:  # an uploaded path outside the upload folders
            yield self._frame("", RunView(), form_error=str(exc), status="❌")
            return
        yield from follow_job(job, allowed_paths(bench.paths), lambda view: self._frame(job.id, view))

    def cancel(self, job_id: str) -> str:
        if job_id and self.web.bench.services.jobs.cancel(job_id):
            return f"⏹ {t('action.cancelling')}"
        return t("web.no_job")

    def _frame(self, job_id: str, view: RunView, *, form_error: str | None = None,
               field_errors: list[Any] | None = None, status: str | None = None) -> list[Any]:
        import gradio as gr

        metrics = view.metrics_figure()  # one chart per quantity, redrawn only when a point arrived
        table = view.table_value()
        return [
            job_id,
            gr.update(value=f"⚠️ {form_error}" if form_error else "", visible=bool(form_error)),
            status if status is not None else view.status(),
            view.progress_html(),
            view.markdown(),
            gr.update(value=view.images or None, visible=bool(view.images)),
            gr.update(value=table, visible=table is not None),
            gr.update(value=metrics, visible=metrics is not None),
            gr.update(value=view.files or None, visible=bool(view.files)),
            *(field_errors if field_errors is not None else [gr.update() for _ in self.fields]),
        ]


# Gradio's own status words that its English and Chinese catalogs lack, so its status tracker
# showed the raw key ("common.complete"); ours fill them in, by the same languages as the app.
GRADIO_STATUS_KEYS = {"common.complete": "status.ok", "common.error": "status.failed"}


def gradio_translations() -> Any:
    """A ``gr.I18n`` for ``launch(i18n=...)`` with the status words Gradio is missing."""
    import gradio as gr

    from localqwen.i18n import catalog

    languages = {"en": "en", "zh": "zh", "zh-CN": "zh"}
    tables = {}
    for locale, language in languages.items():
        words = catalog(language)
        tables[locale] = {key: words.get(ours, catalog("en").get(ours, key)) for key, ours in GRADIO_STATUS_KEYS.items()}
    return gr.I18n(**tables)


def build_web_app(bench: Workbench | None = None) -> WebApp:
    """Build the Blocks (without launching). The caller has run :func:`prepare_environment`."""
    bench = bench or Workbench.create()
    set_language(bench.config.app.language)
    prepare_environment(bench.paths)
    import gradio as gr

    from localqwen.web import chat_tab, tabs

    web = WebApp(bench=bench)
    plugins = bench.host.load_all()
    with gr.Blocks(title=t("web.title"), analytics_enabled=False) as blocks:
        gr.Markdown(f"# LocalQwen\n{t('app.subtitle')}")
        with gr.Tabs():
            with gr.Tab(t("nav.home"), id="tab-home"):
                home = gr.Markdown(home_markdown(bench, plugins), elem_id="home-plugins")
                # Checking the plugins' needs probes the machine (torch): done when the page loads.
                blocks.load(lambda: home_markdown(bench, plugins, plugin_fits(plugins, bench.services.device)),
                            outputs=[home], show_progress="hidden")
            for plugin in plugins:
                if not plugin.actions() and plugin.chats and view_hook(plugin, "web") == (None, ""):
                    continue  # a plugin that only chats lives in the chat tab
                with gr.Tab(plugin.title, id=f"tab-{plugin.id}", elem_id=f"tab-{plugin.id}"):
                    _plugin_tab(web, plugin)
            with gr.Tab(t("nav.chat"), id="tab-chat"):
                web.chat = chat_tab.build(bench)
            with gr.Tab(t("nav.models"), id="tab-models"):
                tabs.models_tab(bench, blocks)
            with gr.Tab(t("nav.jobs"), id="tab-jobs"):
                tabs.jobs_tab(bench)
            with gr.Tab(t("nav.settings"), id="tab-settings"):
                tabs.settings_tab(bench)
    web.blocks = blocks
    return web


def home_markdown(bench: Workbench, plugins: list[Plugin], fits: dict[str, PluginFit] | None = None) -> str:
    """The plugins and their actions, each marked when ``fits`` says this machine does not meet its needs."""
    lines = [f"## {t('home.plugins', count=len(plugins))}"]
    if not plugins:
        lines.append(t("home.no_plugins"))
    for plugin in plugins:
        offers = [a.title for a in plugin.actions()] + ([t("nav.chat")] if plugin.chats else [])
        lines.append(f"- **{plugin.title}** (`{plugin.id}`): {plugin.description} — {', '.join(offers)}")
        fit = (fits or {}).get(plugin.id)
        if fit is not None and not fit.met:
            lines.append(f"  - {t('fit.may_not_run', reason=fit.reason)}")
        if fit is not None and fit.note:
            lines.append(f"  - {fit.note}")
    if bench.host.failures:
        lines.append(f"\n## {t('home.failed', count=len(bench.host.failures))}")
        for failure in sorted(bench.host.failures.values(), key=lambda f: f.name):
            lines.append(f"- ❌ **{failure.name}**: {failure.reason}")
    if bench.config_error is not None:
        lines.append(f"\n⚠️ {t('app.config_error', error=str(bench.config_error))}")
    return "\n".join(lines)


def _plugin_tab(web: WebApp, plugin: Plugin) -> None:
    import gradio as gr

    if plugin.description:
        gr.Markdown(plugin.description)
    with gr.Tabs():
        if plugin.guided_flow() is not None:  # a plugin's wizard comes first; its steps stay as actions too
            from localqwen.web import wizard_tab

            with gr.Tab(t("wizard.open"), id=f"tab-{plugin.id}-wizard", elem_id=f"tab-{plugin.id}-wizard"):
                web.wizards[plugin.id] = wizard_tab.build(web.bench, plugin)
        for item in plugin.actions():
            with gr.Tab(item.title, id=f"tab-{plugin.id}-{item.id}"):
                panel = ActionPanel(web, plugin, item)
                _action_panel(panel)
                web.actions[panel.key] = panel
        hook, problem = view_hook(plugin, "web")
        if hook is not None or problem:
            with gr.Tab(t("web.custom_view"), id=f"tab-{plugin.id}-custom"):
                if problem:
                    gr.Markdown(f"⚠️ {t('home.custom_view_failed', error=problem)}")
                else:
                    try:
                        hook(plugin, web.bench)  # type: ignore[misc]
                    except Exception as exc:  # a broken bespoke view leaves the generated forms working
                        gr.Markdown(f"⚠️ {t('home.custom_view_failed', error=f'{type(exc).__name__}: {exc}')}")


def _action_panel(panel: ActionPanel) -> None:
    import gradio as gr

    key = panel.key
    if panel.action.description:
        gr.Markdown(panel.action.description)
    with gr.Row():
        with gr.Column(scale=2):
            panel.fields = render_form(panel.action.form, options=lambda source: panel.plugin.field_options(
                source, panel.web.bench.context(panel.plugin.id)))
            form_error = gr.Markdown("", visible=False, elem_classes=["lq-field-error"], elem_id=f"form-error-{key}")
            with gr.Row():
                run = gr.Button(t("action.run"), variant="primary", elem_id=f"run-{key}")
                cancel = gr.Button(t("action.cancel"), variant="stop", elem_id=f"cancel-{key}")
        with gr.Column(scale=3):
            status = gr.Markdown("", elem_id=f"status-{key}")
            progress = gr.HTML("", elem_id=f"progress-{key}")
            text = gr.Markdown("", elem_id=f"output-{key}", sanitize_html=True)
            gallery = gr.Gallery(label=t("events.images"), visible=False, height=260, elem_id=f"gallery-{key}")
            table = gr.Dataframe(label=t("events.table"), visible=False, interactive=False, elem_id=f"table-{key}")
            plot = gr.Plot(label=t("events.metrics"), visible=False, elem_id=f"metrics-{key}")
            files = gr.File(label=t("events.files"), file_count="multiple", interactive=False, visible=False,
                            elem_id=f"files-{key}")
    job_id = gr.State("")
    panel.outputs = [job_id, form_error, status, progress, text, gallery, table, plot, files,
                     *[f.error for f in panel.fields]]
    run.click(panel.run, inputs=[f.component for f in panel.fields], outputs=panel.outputs,
              api_name=f"run_{key}".replace("-", "_"), concurrency_limit=None)
    cancel.click(panel.cancel, inputs=[job_id], outputs=[status], api_name=f"cancel_{key}".replace("-", "_"),
                 concurrency_limit=None)
