"""Any plugin's guided flow (plugin_api/guide.py) as one web tab: step k of n, Back/Next, the
setup's name asked once, each step's form prefilled with the values it last ran with, lists to
pick from (entries this machine cannot use are listed greyed out with the reason), what to know
before running (the trainer's memory estimate before Run) and the step's live output.

Every step's form is built once, in its own group; moving shows one group. Which step a browser
is on lives in a ``gr.State``; what each step saved lives with the plugin, so a reload continues.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from localqwen.app import Workbench
from localqwen.guided_flow import FlowWalk
from localqwen.i18n import t
from localqwen.plugin_api import Choice, FieldSpec, FormError, Plugin, StepView, Widget, form_fields
from localqwen.web.event_renderer import RunView, follow_job
from localqwen.web.files import allowed_paths, gradio_temp_dir
from localqwen.web.form_renderer import (
    RenderedField,
    collect_values,
    field_component,
    lay_out_fields,
    takes_info,
)

WIZARD_CSS = """
.lq-unavailable { color: var(--body-text-color-subdued); opacity: .65; }
.lq-step-bar { font-size: 1.05em; }
"""


@dataclass
class StepPanel:
    """One step's components."""

    group: Any
    intro: Any  # Markdown: what to know before running the step
    notes: Any  # Markdown: list entries not available here, greyed out with the reason
    fields: list[RenderedField] = field(default_factory=list)


@dataclass
class WizardTab:
    bench: Workbench
    plugin: Plugin
    steps: list[StepPanel] = field(default_factory=list)
    controls: list[Any] = field(default_factory=list)  # index state, header, back, run, next
    outputs: list[Any] = field(default_factory=list)  # job id, status, progress, text, gallery, plot, files

    def walk(self, name: str, index: int | None = None) -> FlowWalk:
        walk = FlowWalk(self.bench, self.plugin.id, name or None)
        if index is not None:
            walk.go(max(0, min(index, walk.count - 1)))
        return walk

    # -- moving -----------------------------------------------------------------------------------
    def show(self, index: int | None, name: str) -> list[Any]:
        """Everything the tab shows for step ``index`` (None: the setup's first open step)."""
        import gradio as gr

        try:
            walk = self.walk(name, index)
        except ValueError as exc:  # an empty name
            return [gr.update(), f"⚠️ {html.escape(str(exc))}", *[gr.update() for _ in self._step_components()],
                    *[gr.update() for _ in range(3)], *self._cleared_outputs()]
        try:
            view = walk.view()
        except Exception as exc:  # the form still works without prefill or lists
            view = StepView(done=walk.done())
            problem = f"⚠️ {type(exc).__name__}: {exc}"
        else:
            problem = ""
        updates: list[Any] = []
        for number, panel in enumerate(self.steps):
            if number != walk.index:
                updates += [gr.update(visible=False), gr.update(), gr.update(), *[gr.update() for _ in panel.fields]]
                continue
            updates += [gr.update(visible=True), intro_markdown(view.intro) or problem,
                        unavailable_markdown(view.choices), *field_updates(panel.fields, view)]
        return [walk.index, header_markdown(walk, view.done), *updates,
                gr.update(interactive=not walk.first), gr.update(value=walk.step.run_label or t("wizard.run")),
                gr.update(interactive=not walk.last), *self._cleared_outputs()]

    def next(self, index: int, name: str) -> list[Any]:
        return self.show(index + 1, name)

    def back(self, index: int, name: str) -> list[Any]:
        return self.show(index - 1, name)

    def open_setup(self, name: str) -> list[Any]:
        return self.show(None, name)

    # -- running ----------------------------------------------------------------------------------
    def run(self, index: int, name: str, *raw: Any) -> Iterator[list[Any]]:
        """Run the shown step with its fields' values; stream its events; then mark the step bar."""
        try:
            walk = self.walk(name, index)
        except ValueError as exc:
            yield ["", f"⚠️ {html.escape(str(exc))}", *self._blank_outputs(), gr_skip()]
            return
        panel = self.steps[walk.index]
        values_in = self._step_values(walk.index, list(raw))
        try:
            values = collect_values(panel.fields, values_in, [gradio_temp_dir(self.bench.paths), self.bench.paths.uploads_dir])
            job = walk.start(values)
        except FormError as exc:
            message = "; ".join(f"{k}: {v}" for k, v in exc.errors.items())
            yield ["", f"❌ {t('form.fix_errors', count=len(exc.errors))}: {html.escape(message)}",
                   *self._blank_outputs(), gr_skip()]
            return
        except ValueError as exc:
            yield ["", f"❌ {html.escape(str(exc))}", *self._blank_outputs(), gr_skip()]
            return
        last: RunView | None = None

        def frame(view: RunView) -> list[Any]:
            nonlocal last
            last = view
            return [job.id, view.status(), *self._view_outputs(view), gr_skip()]

        yield from follow_job(job, allowed_paths(self.bench.paths), frame)
        # The job's end changes the step marks (and tells the user to go on).
        done = walk.done()
        status = last.status() if last is not None else ""
        if job.status == "ok" and not walk.last:
            status += f"\n\n{t('wizard.done_next')}"
        final = frame(last) if last is not None else ["", "", *self._blank_outputs(), gr_skip()]
        final[1] = status
        final[-1] = header_markdown(walk, done)
        yield final

    def cancel(self, job_id: str) -> str:
        if job_id and self.bench.services.jobs.cancel(job_id):
            return f"⏹ {t('action.cancelling')}"
        return t("web.no_job")

    # -- helpers ----------------------------------------------------------------------------------
    def _step_components(self) -> list[Any]:
        components: list[Any] = []
        for panel in self.steps:
            components += [panel.group, panel.intro, panel.notes, *[f.component for f in panel.fields]]
        return components

    def all_fields(self) -> list[Any]:
        return [f.component for panel in self.steps for f in panel.fields]

    def _step_values(self, index: int, raw: list[Any]) -> list[Any]:
        """The shown step's values out of every step's field values (the run handler gets them all)."""
        start = sum(len(panel.fields) for panel in self.steps[:index])
        return raw[start:start + len(self.steps[index].fields)]

    def _view_outputs(self, view: RunView) -> list[Any]:
        import gradio as gr

        figure = view.metrics_figure()
        # Every table in the text (a step shows several: the preview and its problems, the scores
        # and the base-vs-tuned answers), not only the last one in a grid.
        text = "\n\n".join(part for part in (view.markdown(), tables_markdown(view.tables)) if part)
        return [view.progress_html(), text,
                gr.update(value=view.images or None, visible=bool(view.images)),
                gr.update(value=figure, visible=figure is not None),
                gr.update(value=view.files or None, visible=bool(view.files))]

    def _blank_outputs(self) -> list[Any]:
        return self._view_outputs(RunView())

    def _cleared_outputs(self) -> list[Any]:
        return ["", "", *self._blank_outputs()]  # job id, status, then the view's outputs


def gr_skip() -> Any:
    import gradio as gr

    return gr.update()


def header_markdown(walk: FlowWalk, done: list[str]) -> str:
    parts = []
    for i, (step, current, finished) in enumerate(walk.marks(done)):
        text = ("✓ " if finished else "") + f"{i + 1}. {html.escape(step.title)}"
        parts.append(f"**▶ {text}**" if current else text)
    bar = " · ".join(parts)
    title = t("wizard.step", index=walk.index + 1, count=walk.count, title=walk.step.title)
    return f"{bar}\n\n### {html.escape(title)}"


MAX_TABLE_ROWS = 50


def table_markdown(event: Any) -> str:
    def cell(value: Any) -> str:
        return html.escape(str(value)).replace("|", "\\|").replace("\n", " ")

    head = "| " + " | ".join(cell(c) for c in event.columns) + " |"
    rule = "|" + "---|" * len(event.columns)
    rows = ["| " + " | ".join(cell(c) for c in row) + " |" for row in event.rows[:MAX_TABLE_ROWS]]
    more = [f"… {len(event.rows) - MAX_TABLE_ROWS} more rows"] if len(event.rows) > MAX_TABLE_ROWS else []
    return "\n".join([f"**{cell(event.title)}**", "", head, rule, *rows, *more])


def tables_markdown(tables: list[Any]) -> str:
    return "\n\n".join(table_markdown(table) for table in tables)


def intro_markdown(events: list[Any]) -> str:
    """The events shown before a step runs, as Markdown (tables, warnings, notes)."""
    if not events:
        return ""
    parts = [f"**{t('wizard.intro')}**"]
    for event in events:
        if getattr(event, "kind", "") == "table":
            parts.append(table_markdown(event))
        elif getattr(event, "kind", "") in ("warning", "log"):
            parts.append(("⚠️ " if event.kind == "warning" else "") + html.escape(event.message))
    return "\n\n".join(parts)


def unavailable_markdown(choices: dict[str, list[Choice]]) -> str:
    """List entries this machine cannot use, greyed out, each with why (a drop-down cannot grey one out)."""
    lines = [f'<span class="lq-unavailable">✗ {html.escape(c.text)}: {html.escape(c.unavailable)}</span>'
             for entries in choices.values() for c in entries if not c.available]
    return "<br>".join(lines)


def field_updates(fields: list[RenderedField], view: StepView) -> list[Any]:
    import gradio as gr

    updates = []
    for item in fields:
        name = item.spec.name
        kwargs: dict[str, Any] = {}
        if name in view.choices:
            kwargs["choices"] = [(c.text, c.value) for c in view.choices[name] if c.available]
        if view.values.get(name) is not None and item.spec.widget not in (Widget.FILE, Widget.IMAGE):
            kwargs["value"] = view.values[name]
        updates.append(gr.update(**kwargs))
    return updates


def _list_component(spec: FieldSpec) -> Any:
    """A field the flow offers as a list: a drop-down (free values still typed in for paths and names)."""
    import gradio as gr

    free = spec.widget != Widget.CHOICE
    return gr.Dropdown(choices=[(str(c), c) for c in spec.choices], value=spec.default, label=spec.label,
                       info=spec.help or None, allow_custom_value=free, elem_id=f"field-{spec.name}")


def _render_step_fields(specs: list[FieldSpec], lists: tuple[str, ...], plugin_id: str, step_id: str) -> list[RenderedField]:
    import gradio as gr

    rendered: list[RenderedField] = []

    def add(spec: FieldSpec) -> None:
        component = _list_component(spec) if spec.name in lists else field_component(spec)
        component.elem_id = f"wizard-{plugin_id}-{step_id}-{spec.name}"
        if spec.help and not takes_info(component):
            gr.Markdown(spec.help, elem_classes=["lq-field-help"])
        rendered.append(RenderedField(spec, component, None))

    return lay_out_fields(specs, add, rendered)


def build(bench: Workbench, plugin: Plugin) -> WizardTab:
    """Create the tab's components inside the current Blocks context and wire the handlers."""
    import gradio as gr

    flow = plugin.guided_flow()
    assert flow is not None
    tab = WizardTab(bench, plugin)
    key = plugin.id
    walk = FlowWalk(bench, plugin.id)
    gr.HTML(f"<style>{WIZARD_CSS}</style>")
    header = gr.Markdown(header_markdown(walk, walk.done()), elem_id=f"wizard-header-{key}",
                         elem_classes=["lq-step-bar"])
    name = gr.Textbox(value=walk.name, label=t("wizard.name"), info=t("wizard.name_help"),
                      elem_id=f"wizard-name-{key}")
    index = gr.State(walk.index)
    with gr.Row():
        with gr.Column(scale=2):
            for number, step in enumerate(flow.steps):
                action = plugin.action(step.action)
                with gr.Group(visible=number == walk.index, elem_id=f"wizard-step-{key}-{step.id}") as group:
                    if action.description:
                        gr.Markdown(action.description)
                    specs = [s for s in form_fields(action.form) if s.name != flow.name_field]
                    fields = _render_step_fields(specs, step.lists, key, step.id)
                    notes = gr.Markdown("", elem_id=f"wizard-notes-{key}-{step.id}")
                    intro = gr.Markdown("", elem_id=f"wizard-intro-{key}-{step.id}")
                tab.steps.append(StepPanel(group, intro, notes, fields))
            with gr.Row():
                back = gr.Button(t("wizard.back"), interactive=not walk.first, elem_id=f"wizard-back-{key}")
                run = gr.Button(walk.step.run_label or t("wizard.run"), variant="primary", elem_id=f"wizard-run-{key}")
                cancel = gr.Button(t("action.cancel"), variant="stop", elem_id=f"wizard-cancel-{key}")
                forward = gr.Button(t("wizard.next"), interactive=not walk.last, elem_id=f"wizard-next-{key}")
        with gr.Column(scale=3):
            status = gr.Markdown("", elem_id=f"wizard-status-{key}")
            progress = gr.HTML("", elem_id=f"wizard-progress-{key}")
            text = gr.Markdown("", elem_id=f"wizard-output-{key}", sanitize_html=True)
            gallery = gr.Gallery(label=t("events.images"), visible=False, height=300, object_fit="contain",
                                 elem_id=f"wizard-gallery-{key}")  # a chart shown whole, not cropped
            plot = gr.Plot(label=t("events.metrics"), visible=False, elem_id=f"wizard-metrics-{key}")
            files = gr.File(label=t("events.files"), file_count="multiple", interactive=False, visible=False,
                            elem_id=f"wizard-files-{key}")
    job_id = gr.State("")
    outputs = [job_id, status, progress, text, gallery, plot, files]
    tab.outputs = outputs
    shown = [index, header, *tab._step_components(), back, run, forward, *outputs]
    api = key.replace("-", "_")
    forward.click(tab.next, inputs=[index, name], outputs=shown, api_name=f"wizard_{api}_next")
    back.click(tab.back, inputs=[index, name], outputs=shown, api_name=f"wizard_{api}_back")
    name.submit(tab.open_setup, inputs=[name], outputs=shown, api_name=f"wizard_{api}_open")
    run.click(tab.run, inputs=[index, name, *tab.all_fields()], outputs=[*outputs, header],
              api_name=f"wizard_{api}_run", concurrency_limit=None)
    cancel.click(tab.cancel, inputs=[job_id], outputs=[status], api_name=f"wizard_{api}_cancel",
                 concurrency_limit=None)
    root = gr.context.Context.root_block
    if root is not None:  # fill the lists and prefill when the page opens (they change on disk)
        root.load(tab.open_setup, inputs=[name], outputs=shown, show_progress="hidden")
    return tab
