"""The report tests' Chromium: one per folder (a launch costs seconds), as the dashboard's."""

from __future__ import annotations

import pytest

from tests.support.dashboard.browser import chromium


@pytest.fixture(scope="package")
def browser():
    with chromium() as launched:
        yield launched
