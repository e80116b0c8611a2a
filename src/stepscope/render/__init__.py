"""Renderers: tool results as JSON, text tables, CSV, JUnit, GitHub annotations, Markdown or
one HTML file (a registry of formats)."""

from stepscope.render.formats import FORMATS, render

__all__ = ["FORMATS", "render"]
