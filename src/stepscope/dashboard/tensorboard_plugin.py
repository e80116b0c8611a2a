"""stepscope's dashboard as a TensorBoard plugin: a "stepscope" tab in ``tensorboard --logdir``.

TensorBoard finds it through the ``tensorboard_plugins`` entry point (pyproject.toml), so
``pip install stepscope`` is all it takes, and imports this module only then: it is the one
module of stepscope that imports tensorboard, which stays out of stepscope's dependencies.

How a request flows (docs/dashboard.md, "Inside TensorBoard"):

1. TensorBoard lists the plugin (``is_active``: the logdir holds a profile stepscope can
   read) with ``es_module_path``; its page makes a frame for the tab and loads
   ``/data/plugin/stepscope/tensorboard_entry.js`` there, whose ``render()`` replaces
   the frame's document by the dashboard's page, ``/data/plugin/stepscope/index.html``,
   which fills the tab.
2. Every later request from that page is relative to it (the page's API calls and assets
   name no absolute path), so it stays under ``/data/plugin/stepscope/`` wherever
   TensorBoard is mounted (``--path_prefix``, a notebook's proxy): TensorBoard routes the
   whole folder (the ``/*`` route) to ``_serve``, which moves the plugin's prefix from
   ``PATH_INFO`` to ``SCRIPT_NAME``, and the bridge (``stepscope.dashboard.wsgi``) hands
   the request to the same Starlette application ``stepscope serve`` runs, on its own
   asyncio loop, where it is routed as ``/api/...`` and ``/index.html``.

The application is made at the first request, so a TensorBoard whose stepscope tab is
never opened starts no worker process and makes no cache folder. Who may use it inside
TensorBoard is ``Access.for_tensorboard``'s rule (docs/security.md).
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tensorboard.backend import application
from tensorboard.plugins import base_plugin

from stepscope.dashboard.api.app import create_app
from stepscope.dashboard.api.security import Access
from stepscope.dashboard.api.state import servable_runs
from stepscope.dashboard.jobs.analysis_cache import AnalysisCache, default_cache_dir
from stepscope.dashboard.wsgi import AsgiBridge, Environ, StartResponse

PLUGIN_NAME = "stepscope"
TAB_NAME = "stepscope"
ENTRY_ROUTE = "/tensorboard_entry.js"
# Where TensorBoard serves this plugin's routes (below its own --path_prefix).
PREFIX = f"{application.DATA_PREFIX}{application.PLUGIN_PREFIX}/{PLUGIN_NAME}"
# The frame TensorBoard made for the tab becomes the dashboard's page (relative to this
# module, so under any prefix); replace(), so Back does not return to the empty frame.
ENTRY_MODULE = b"""// stepscope's tab in TensorBoard: the tab's frame becomes the dashboard's own page.
export function render() {
  window.location.replace(new URL("index.html", import.meta.url).href);
}
"""
TEXT_HEADERS = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-cache")]


def _answer(start_response: StartResponse, status: str, content_type: str, body: bytes) -> list[bytes]:
    start_response(status, [("Content-Type", content_type), ("Content-Length", str(len(body))), *TEXT_HEADERS])
    return [body]


def entry_module(environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
    """The tab's ES module (``FrontendMetadata.es_module_path``)."""
    return _answer(start_response, "200 OK", "text/javascript; charset=utf-8", ENTRY_MODULE)


class StepscopePlugin(base_plugin.TBPlugin):  # type: ignore[misc]  # TensorBoard is untyped: its base class is Any
    """The dashboard for TensorBoard's ``--logdir`` (``context.logdir``)."""

    plugin_name = PLUGIN_NAME

    def __init__(self, context: base_plugin.TBContext) -> None:
        flags = context.flags
        self.logdir = Path(context.logdir) if context.logdir else None
        self.access = Access.for_tensorboard(
            getattr(flags, "host", None),
            bool(getattr(flags, "bind_all", False)),
            getattr(flags, "stepscope_allow_host", None) or (),
            True if getattr(flags, "stepscope_captures", False) else None,
        )
        cache_dir = getattr(flags, "stepscope_cache_dir", None)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._lock = threading.Lock()
        self._bridge: AsgiBridge | None = None
        self._active = False

    def get_plugin_apps(self) -> dict[str, Any]:
        return {ENTRY_ROUTE: entry_module, "/*": self._serve}

    def is_active(self) -> bool:
        """Whether the logdir holds a profile the dashboard would list. TensorBoard asks at
        every load of its page; once true it stays true (a listing walks the logdir)."""
        if not self._active and self.logdir is not None:
            self._active = bool(servable_runs(self.logdir).runs)
        return self._active

    def frontend_metadata(self) -> base_plugin.FrontendMetadata:
        # disable_reload: the page asks the server itself; TensorBoard's reload button would
        # not reach into its frame.
        return base_plugin.FrontendMetadata(es_module_path=ENTRY_ROUTE, tab_name=TAB_NAME, disable_reload=True)

    def _serve(self, environ: Environ, start_response: StartResponse) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if self.logdir is None:
            return _answer(start_response, "404 Not Found", "application/json", b'{"error": "TensorBoard was started without --logdir"}')
        if not path.startswith(PREFIX + "/"):
            return _answer(start_response, "404 Not Found", "application/json", b'{"error": "not a stepscope address"}')
        inner = dict(environ, SCRIPT_NAME=environ.get("SCRIPT_NAME", "") + PREFIX, PATH_INFO=path[len(PREFIX) :])
        return self._started()(inner, start_response)

    def _started(self) -> AsgiBridge:
        with self._lock:
            if self._bridge is None:
                assert self.logdir is not None
                self._bridge = AsgiBridge(create_app(self.logdir, AnalysisCache(self.cache_dir), self.access))
            return self._bridge


class StepscopeLoader(base_plugin.TBLoader):  # type: ignore[misc]  # TensorBoard is untyped: its base class is Any
    """The entry point: stepscope's flags on TensorBoard's command line, then the plugin."""

    def define_flags(self, parser: argparse.ArgumentParser) -> None:
        group = parser.add_argument_group("stepscope")
        group.add_argument(
            "--stepscope_allow_host",
            metavar="NAME",
            action="append",
            default=[],
            help="stepscope: also answer requests for this Host name (a proxy's, a tunnel's); repeat for more",
        )
        group.add_argument(
            "--stepscope_captures",
            action="store_true",
            help="stepscope: allow captures from the page when TensorBoard listens beyond loopback (off there by default)",
        )
        group.add_argument(
            "--stepscope_cache_dir",
            metavar="DIR",
            default="",
            help="stepscope: where analyses are cached (default $XDG_CACHE_HOME/stepscope, else ~/.cache/stepscope)",
        )

    def load(self, context: base_plugin.TBContext) -> StepscopePlugin:
        return StepscopePlugin(context)
