"""One real PyTorch training job captured with stepscope's defaults: framework ops from the
torch tracer, stepscope's steps and annotations, and DataLoader worker events, all in one
profile that the tools read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import stepscope
from stepscope.analysis import run_tool
from stepscope.trace import names
from tests.support.frameworks import run_framework_script

pytestmark = pytest.mark.framework

IMPORTS = "import torch, stepscope, stepscope.data"
BODY = """
class Items(torch.utils.data.Dataset):
    def __len__(self):
        return 16

    def __getitem__(self, index):
        with stepscope.data.stage("decode"):
            time.sleep(0.002)
            return torch.full((8,), float(index))

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = torch.utils.data.DataLoader(Items(), batch_size=4, num_workers=2)
with stepscope.profile(OUT / "logdir") as session:
    for number, batch in enumerate(stepscope.data.instrument(loader, name="train")):
        with stepscope.step(number):
            optimizer.zero_grad()
            model(batch).sum().backward()
            optimizer.step()
(OUT / "manifest.json").write_text(json.dumps({"path": str(session.path), "batches": len(loader)}))
"""


def test_torch_dataloader_job_profile(tmp_path: Path):
    run = run_framework_script(tmp_path, "torch", IMPORTS, BODY)
    profile = stepscope.load(run["path"])
    profile.validate()
    host = profile.plane(names.HOST_PLANE)
    event_names = [host.event_name(r) for r in range(len(host.events))]
    lines = [host.lines[int(line)].name for line in host.events.line]
    # 16 items in batches of 4: 4 steps, 4 waits, 16 decodes, all in worker processes.
    assert event_names.count(names.STEPSCOPE_STEP) == run["batches"] == 4
    assert event_names.count(names.STEPSCOPE_INPUT_WAIT) == 4
    decodes = [line for name, line in zip(event_names, lines) if name == "stepscope.data.decode"]
    assert len(decodes) == 16 and all(line.startswith("process ") for line in decodes)
    # The torch tracer's ops: two Linear layers per forward, 4 steps.
    assert event_names.count("aten::addmm") == 2 * 4
    overview = run_tool("overview_page", profile).to_json()
    assert overview["step_source"] == "step_num" and [s["step"] for s in overview["steps"]] == [0, 1, 2, 3]
    assert all(s["breakdown"]["input_ps"] > 0 for s in overview["steps"])
    json.dumps(overview)
