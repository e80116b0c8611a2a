"""Playwright on Debian's Chromium (/usr/bin/chromium), never a browser Playwright downloads."""

from __future__ import annotations

from urllib.parse import urlencode, urlparse

from tests.support.traces import ROOT

CHROMIUM = "/usr/bin/chromium"
# Flags for a sandbox with no network: without the background-networking ones Chromium
# keeps trying Google's hosts.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = ROOT / "screenshots"


def page_url(base: str, **params: str) -> str:
    return base + ("?" + urlencode(params) if params else "")


def foreign_requests(urls: list[str]) -> list[str]:
    """Requests the page made anywhere but the stepscope server (must be none: offline)."""
    return [url for url in urls if urlparse(url).hostname not in ("127.0.0.1",) and not url.startswith(("data:", "blob:"))]
