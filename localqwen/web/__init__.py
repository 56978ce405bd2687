"""The Gradio web view. Only this package (and plugins' own ``web.py``) imports Gradio."""
