"""Each verdict rule on the smallest figures that make it fire and not fire, its finding's
text and numbers, and the order ``verdict._findings`` puts the findings in.

The thresholds are the rules' documented ones (docs/tools/overview_page.md): input 5%
(moderately) and 20% (highly), kernel launch 10%, collectives 10%, host 50%; each is tried
at the threshold (fires: the rules say ">=") and 0.1 below it (does not). Every sentence
is written out by hand from the rule's documented wording, with the share to one decimal.
"""

from __future__ import annotations

import dataclasses

import pytest

from stepscope.analysis.findings.figures import Figures, Leads, Shares
from stepscope.analysis.findings.finding import Finding
from stepscope.analysis.findings.loader_settings import LoaderSettings
from stepscope.analysis.findings.rules import (
    RULES,
    CollectivesBoundRule,
    DeviceBoundRule,
    HostBoundRule,
    HostOnlyRule,
    InputBoundRule,
    KernelLaunchBoundRule,
    NoStepRule,
)
from stepscope.analysis.findings.verdict import _findings

# Four steps with a device that computes for 90% of them and nothing else: no rule but the
# device-bound fallback fires.
QUIET = Shares(input=0.0, kernel_launch=0.0, collectives=0.0, host=0.0, host_compute=0.0, idle=0.0, device_compute=90.0, steps=4, has_device=True)


def figures(leads: Leads | None = None, loader: LoaderSettings | None = None, **shares: float | bool) -> Figures:
    return Figures(dataclasses.replace(QUIET, **shares), leads or Leads(), loader)


def test_no_step_fires_only_without_a_step_marker():
    rule = NoStepRule()
    assert rule.fires(figures(steps_known=False)) and not rule.fires(figures())
    finding = rule.finding(figures(steps_known=False))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == ("unknown", 0.0, "trace_viewer", None, None, "")
    assert finding.summary == (
        "No step was found (no step marker), so stepscope cannot tell what bounds a step; the breakdown shows where the profiled time went."
    )
    assert finding.evidence == "no step marker: the whole profiled window is one step"
    assert len(finding.advice) == 1 and finding.advice[0].startswith("Mark the steps (stepscope.step(),")


@pytest.mark.parametrize(("share", "bound"), [(4.9, None), (5.0, "moderately"), (19.9, "moderately"), (20.0, "highly")])
def test_input_bound_fires_from_5_percent_and_is_highly_from_20(share: float, bound: str | None):
    rule = InputBoundRule()
    assert rule.fires(figures(input=share)) == (bound is not None)
    if bound is None:
        return
    finding = rule.finding(figures(input=share))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "input",
        share,
        "input_pipeline_analyzer",
        "steps",
        "input_percent",
        "",
    )
    assert finding.summary == f"Your program is {bound} input-bound: on average {share:.1f}% of a step's time is spent waiting for input."
    assert finding.evidence == f"input wait is {share:.1f}% of the step time (mean of the per-step shares over 4 step(s))"
    # No DataLoader recorded: look at the analyzer, load in parallel, prefetch.
    assert len(finding.advice) == 3 and finding.advice[0] == "Look at the input pipeline analyzer for where the input time goes."


def test_input_bound_evidence_names_the_dataloaders_settings():
    loader = LoaderSettings(num_workers=2, parallel=True, prefetch_factor=4, source="recorded")
    finding = InputBoundRule().finding(figures(input=40.0, loader=loader))
    assert finding.evidence == (
        "input wait is 40.0% of the step time (mean of the per-step shares over 4 step(s)); the DataLoader has num_workers=2, prefetch_factor=4 (from recorded)"
    )
    # Workers already: the advice after them, twice the workers where it is reading.
    assert "Where it is reading (storage latency) and the CPU has cores to spare: num_workers=4." in finding.advice


def test_kernel_launch_bound_fires_from_10_percent():
    rule = KernelLaunchBoundRule()
    assert not rule.fires(figures(kernel_launch=9.9)) and rule.fires(figures(kernel_launch=10.0))
    finding = rule.finding(figures(kernel_launch=12.34))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "kernel_launch",
        12.34,
        "kernel_stats",
        "kernels",
        "occurrences",
        "",
    )
    assert finding.summary == "Your program is kernel-launch bound: in the median step 12.3% of the time is spent launching kernels."
    assert finding.evidence == "kernel launch calls take 12.3% of the step time (median of the per-step shares over 4 step(s))"
    assert finding.advice[0] == "Fuse small ops (torch.compile, XLA jit) or use CUDA graphs to launch fewer kernels."


def test_collectives_bound_fires_from_10_percent_and_points_at_the_largest_collective():
    rule = CollectivesBoundRule()
    assert not rule.fires(figures(collectives=9.9)) and rule.fires(figures(collectives=10.0))
    finding = rule.finding(figures(collectives=19.0, leads=Leads(top_collective_op="nccl:all_reduce")))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "collectives",
        19.0,
        "framework_op_stats",
        "framework_ops",
        "total_self_time_us",
        "nccl:all_reduce",
    )
    assert finding.summary == "Your program waits on communication: in the median step 19.0% of the time is collectives that no computation hides."
    assert finding.evidence == "collectives not overlapped with compute take 19.0% of the step time (median of the per-step shares over 4 step(s))"
    assert len(finding.advice) == 3
    # No collective op among the framework ops: the trace viewer, no table.
    alone = rule.finding(figures(collectives=19.0))
    assert (alone.tool, alone.table, alone.sort_key, alone.query) == ("trace_viewer", None, None, "")


def test_host_bound_fires_from_50_percent_on_a_profile_with_a_device():
    rule = HostBoundRule()
    assert not rule.fires(figures(host=49.9)) and rule.fires(figures(host=50.0))
    assert not rule.fires(figures(host=90.0, has_device=False))  # HostOnlyRule's
    finding = rule.finding(figures(host=62.5, leads=Leads(top_host_op="aten::copy_")))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "host",
        62.5,
        "framework_op_stats",
        "framework_ops",
        "total_self_time_us",
        "aten::copy_",
    )
    assert finding.summary == "Your program is host-bound: in the median step the device waits on the host for 62.5% of the time."
    assert finding.evidence == "host compute and idle time take 62.5% of the step time with no device work (median of the per-step shares over 4 step(s))"


def test_host_only_fires_on_every_profile_without_a_device():
    rule = HostOnlyRule()
    assert rule.fires(figures(has_device=False)) and not rule.fires(figures(host=90.0))
    finding = rule.finding(figures(has_device=False, host=90.0, host_compute=70.0, idle=20.0, leads=Leads(top_host_op="work")))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "host",
        90.0,
        "framework_op_stats",
        "framework_ops",
        "total_self_time_us",
        "work",
    )
    assert finding.summary == "Your program is host-bound (no accelerator in this profile): in the median step host compute takes 70.0% of the time."
    assert finding.evidence == "no device in the profile: host compute 70.0%, idle 20.0% of the step time (medians of the per-step shares over 4 step(s))"


def test_device_bound_quotes_the_breakdowns_device_compute_share():
    rule = DeviceBoundRule()
    assert rule.fires(figures())
    finding = rule.finding(figures(leads=Leads(top_device_op="fusion")))
    assert (finding.kind, finding.share, finding.tool, finding.table, finding.sort_key, finding.query) == (
        "device",
        90.0,
        "framework_op_stats",
        "framework_ops",
        "total_self_time_us",
        "fusion",
    )
    assert finding.summary == "Your program is device-bound: the device computes for 90.0% of the step time."
    assert finding.evidence == "device compute takes 90.0% of the kept steps' summed time (the breakdown's share, over 4 step(s))"


def kinds(found: list[Finding]) -> list[str]:
    return [finding.kind for finding in found]


def test_input_comes_first_then_the_bounds_by_share_and_device_only_alone():
    # input 6 (moderately) is the smallest share yet first; collectives 30 > kernel launch 12.
    assert kinds(_findings(figures(input=6.0, kernel_launch=12.0, collectives=30.0))) == ["input", "collectives", "kernel_launch"]
    # Equal shares keep the registry's order: kernel launch before collectives before host.
    assert kinds(_findings(figures(kernel_launch=60.0, collectives=60.0, host=60.0))) == ["kernel_launch", "collectives", "host"]
    assert kinds(_findings(figures())) == ["device"]
    assert kinds(_findings(figures(has_device=False, host=5.0))) == ["host"]


def test_no_step_stands_alone_whatever_the_shares():
    assert kinds(_findings(figures(steps_known=False, input=40.0, kernel_launch=30.0))) == ["unknown"]


def test_the_registry_holds_each_rule_once_by_a_distinct_name():
    assert len({rule.name for rule in RULES}) == len({type(rule) for rule in RULES}) == len(RULES) == 7


def test_a_finding_takes_its_fields_by_keyword_only():
    with pytest.raises(TypeError):
        Finding("input", 5.0, "summary", "evidence", "input_pipeline_analyzer", ())  # type: ignore[misc]
