"""Log directory layouts: TensorBoard/XProf sessions, torch's trace handler, single files."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import stepscope
from stepscope.trace.logdir import make_path, parse_path, safe_host
from tests.support.traces import shared

XPLANE = "xplane/tpu_v_inference_4chips.xplane.pb"
KINETO = "kineto/cpu_only_rank34.pt.trace.json.gz"


def _copy(name: str, target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(shared(name), target)
    return target


def test_tensorboard_layout_names_runs_as_xprof(tmp_path: Path):
    _copy(XPLANE, make_path(tmp_path, "2026_01_02_03_04_05", "host-a"))
    _copy(XPLANE, make_path(tmp_path, "2026_01_02_03_04_05", "host-b"))
    _copy(XPLANE, make_path(tmp_path, "2026_02_01_00_00_00", "host-a", tb_run="train"))
    # A session with both XSpace and trace JSON for a host: the XSpace is the host's profile.
    session = tmp_path / "plugins" / "profile" / "2026_01_02_03_04_05"
    _copy(KINETO, session / "host-a.trace.json.gz")
    runs = stepscope.discover(tmp_path)
    assert [run.name for run in runs] == ["2026_01_02_03_04_05", "train/2026_02_01_00_00_00"]
    assert [host.name for host in runs[0].hosts] == ["host-a", "host-b"]
    assert runs[0].host("host-a").path.name == "host-a.xplane.pb"
    assert runs[1].hosts[0].path == make_path(tmp_path, "2026_02_01_00_00_00", "host-a", tb_run="train")


def test_torch_trace_handler_layout(tmp_path: Path):
    _copy(KINETO, tmp_path / "resnet" / "worker0.1700000000000.pt.trace.json.gz")
    _copy(KINETO, tmp_path / "resnet" / "worker1.1700000000001.pt.trace.json.gz")
    (tmp_path / "resnet" / "notes.json").write_text("{}")
    runs = stepscope.discover(tmp_path)
    assert [run.name for run in runs] == ["resnet"]
    assert [host.name for host in runs[0].hosts] == ["worker0.1700000000000", "worker1.1700000000001"]


def test_single_file_is_one_run(tmp_path: Path):
    path = _copy(XPLANE, tmp_path / "tpu.xplane.pb")
    (run,) = stepscope.discover(path)
    assert run.name == "tpu.xplane.pb" and [h.name for h in run.hosts] == ["tpu"]


def test_parse_path_inverts_make_path(tmp_path: Path):
    path = make_path(tmp_path, "s1", "my host/../x", tb_run="a/b")
    # Host names never carry path separators or traversal into the layout.
    assert path.parent == tmp_path / "a" / "b" / "plugins" / "profile" / "s1"
    parsed = parse_path(tmp_path, path)
    assert parsed.run == "a/b/s1" and parsed.host == safe_host("my host/../x") == "my_host_.._x"


@pytest.mark.parametrize("make", ["empty", "missing"])
def test_no_profiles_is_a_clear_error(tmp_path: Path, make: str):
    target = tmp_path / "logs"
    if make == "empty":
        (target / "sub").mkdir(parents=True)
        (target / "sub" / "readme.txt").write_text("nothing here")
    with pytest.raises(stepscope.ProfileFormatError, match="contains no profiles" if make == "empty" else "does not exist"):
        stepscope.discover(target)
