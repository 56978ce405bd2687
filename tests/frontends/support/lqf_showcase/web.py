"""The showcase plugin's bespoke web view (the optional ``build_tab`` hook)."""

from __future__ import annotations


def build_tab(plugin, bench) -> None:
    import gradio as gr

    gr.Markdown(f"Bespoke view of {plugin.title}", elem_id="showcase-bespoke")
