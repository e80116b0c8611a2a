"""Renderers: a tool result as JSON, text tables for the terminal, or CSV (registry)."""

from stepscope.render.formats import RENDERERS, render

__all__ = ["RENDERERS", "render"]
