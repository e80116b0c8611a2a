"""The memory page's "Largest allocations" follows the device selector:
the shown device's allocations only, largest first (on a tie, the earliest first), at
1280x800 and 1920x1080, on a real ``stepscope serve`` of a two-device trace made here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.dashboard.browser import open_tool, watched_page
from tests.support.dashboard.server import DashboardServer

T0 = 1_700_000_000_000_000  # µs since the epoch: time 0 of the trace
PID, TID = 7, 1
CPU, CUDA = 0, 1
VIEWPORTS = [(1280, 800), (1920, 1080)]


def _op(name: str, ts: int, dur: int) -> dict:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": TID, "ts": T0 + ts, "dur": dur, "args": {}}


def _memory(ts: int, size: int, device_type: int, device_id: int, addr: int) -> dict:
    args = {"Device Type": device_type, "Device Id": device_id, "Bytes": size, "Addr": addr}
    return {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID, "tid": TID, "ts": T0 + ts, "args": args}


def two_device_trace(path: Path) -> Path:
    """Times in µs from the start; frees matched by Addr.

    CPU (Device Type 0, Id -1), all in aten::add [5, 45):
      10  +8      addr 1   freed at 40
      20  +8      addr 2   live at the end
      30  +64     addr 3   live at the end          peak 8 + 8 + 64 = 80 B at 30
    GPU:0 (Device Type 1, Id 0), in aten::conv2d [11, 35) then aten::linear [41, 65):
      12  +4096   addr 16  freed at 50
      22  +1024   addr 17  live at the end
      32  +4096   addr 18  live at the end
      42  +65536  addr 19  freed at 60              peak 74,752 B at 42
    Largest first, ties the earliest first:
      GPU:0  65536 (42 -> 60), 4096 (12 -> 50), 4096 (32, live), 1024 (22, live)
      CPU    64 (30, live), 8 (10 -> 40), 8 (20, live)
    The page opens on GPU:0 (the largest peak); the CPU's 8-byte blocks are not on it.
    """
    events = [
        _op("ProfilerStep#1", 0, 100),
        _op("aten::add", 5, 40),
        _op("aten::conv2d", 11, 24),
        _op("aten::linear", 41, 24),
        _memory(10, 8, CPU, -1, 1),
        _memory(12, 4096, CUDA, 0, 16),
        _memory(20, 8, CPU, -1, 2),
        _memory(22, 1024, CUDA, 0, 17),
        _memory(30, 64, CPU, -1, 3),
        _memory(32, 4096, CUDA, 0, 18),
        _memory(40, -8, CPU, -1, 1),
        _memory(42, 65536, CUDA, 0, 19),
        _memory(50, -4096, CUDA, 0, 16),
        _memory(60, -65536, CUDA, 0, 19),
    ]
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    return path


EXPECTED = {
    "GPU:0": [(65536, 42.0, 60.0), (4096, 12.0, 50.0), (4096, 32.0, None), (1024, 22.0, None)],
    "CPU": [(64, 30.0, None), (8, 10.0, 40.0), (8, 20.0, None)],
}


@pytest.fixture(scope="module")
def memory_server(tmp_path_factory):
    logdir = tmp_path_factory.mktemp("memory") / "logs"
    two_device_trace(logdir / "two_devices" / "worker0.pt.trace.json")
    running = DashboardServer(logdir, tmp_path_factory.mktemp("memory_cache"))
    yield running
    running.stop()


def shown_allocations(page) -> list[tuple[int, float, float | None]]:
    rows = page.locator('[data-card="allocations"] table[data-table="allocations"] tbody tr')
    out = []
    for index in range(rows.count()):
        row = rows.nth(index)

        def value(key: str, row=row) -> str:
            return row.locator(f'td[data-key="{key}"]').get_attribute("data-value") or ""

        end = value("end_us")
        out.append((int(value("bytes")), float(value("start_us")), float(end) if end not in ("", "null") else None))
    return out


@pytest.mark.parametrize(("width", "height"), VIEWPORTS)
def test_largest_allocations_follow_the_device_selector(browser, memory_server, width, height):
    where = dict(run="two_devices", host="worker0")
    # The tool's JSON holds each device's list in that order too.
    devices = {d["device"]: d for d in memory_server.ready("/api/data", **where, tool="memory_profile").json()["devices"]}
    assert {name: [(a["bytes"], a["start_us"], a["end_us"]) for a in d["allocations"]] for name, d in devices.items()} == EXPECTED
    with watched_page(browser) as page:
        page.set_viewport_size({"width": width, "height": height})
        open_tool(page, memory_server, "memory_profile", **where)
        assert page.locator("#memory-device").input_value() == "GPU:0"
        assert shown_allocations(page) == EXPECTED["GPU:0"]
        card = page.locator('[data-card="allocations"]')
        assert "made on GPU:0" in card.inner_text()
        assert card.locator("table").is_visible()
        # The peak holders: GPU:0's only (live just after 42 µs: aten::conv2d 4096 + 1024 +
        # 4096 = 9216 B, aten::linear 65536 B).
        holders = page.locator('[data-card="peak_holders"] tbody td[data-key="device"]')
        assert set(holders.all_inner_texts()) == {"GPU:0"}
        page.select_option("#memory-device", "CPU")
        page.wait_for_function("() => document.querySelector('#memory-summary').dataset.device === 'CPU'")
        assert shown_allocations(page) == EXPECTED["CPU"]
        assert "made on CPU" in page.locator('[data-card="allocations"]').inner_text()
        assert set(page.locator('[data-card="peak_holders"] tbody td[data-key="device"]').all_inner_texts()) == {"CPU"}
