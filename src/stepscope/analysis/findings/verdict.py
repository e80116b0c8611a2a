"""The overview's recommendation: what bounds the step, the numbers it rests on, where to look.

The rules (``findings.rules``) read the figures (``findings.figures``: per-step shares of
the steady-state steps, the ops the findings point at, the DataLoader's settings); every
rule in ``RULES`` that fires makes a finding, placed as its rule says (alone, first,
ranked by share, or as the fallback), and the first finding is the verdict and its
summary. The recommendation adds every finding's advice and evidence, each with what
fixing it would buy where a caller predicts it (``finding_gains``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypedDict

from stepscope.analysis.findings.figures import Figures, Leads, Shares
from stepscope.analysis.findings.finding import Evidence, Finding, PredictedGain
from stepscope.analysis.findings.loader_settings import LoaderSettings
from stepscope.analysis.findings.rules import RULES, Placement, Rule, input_bound_verdict


class Recommendation(TypedDict):
    """The overview's verdict (documented in docs/tools/overview_page.md)."""

    verdict: str
    input_bound: str  # "highly" | "moderately" | "not"
    input_percent: float
    kernel_launch_percent: float
    collectives_percent: float
    host_percent: float
    summary: str
    next_steps: list[str]
    evidence: list[Evidence]
    set_aside: str
    outside_steps: str  # the device work in no step, in words ("" when under the overview's threshold)


def _findings(figures: Figures, rules: tuple[Rule, ...] = RULES) -> list[Finding]:
    """The findings of every rule that fires, in the order their placements give."""
    placed: dict[Placement, list[Finding]] = {placement: [] for placement in Placement}
    for rule in rules:
        if rule.fires(figures):
            if rule.placement is Placement.ALONE:
                return [rule.finding(figures)]
            placed[rule.placement].append(rule.finding(figures))
    found = placed[Placement.FIRST] + sorted(placed[Placement.RANKED], key=lambda finding: -finding.share)
    return found or placed[Placement.FALLBACK]


def recommendation(
    shares: Shares,
    set_aside_note: str,
    leads: Leads | None = None,
    outside_steps_note: str = "",
    loader: LoaderSettings | None = None,
    predict: Callable[[str], PredictedGain | None] | None = None,
) -> Recommendation:
    """``predict(finding kind)``: what fixing that finding would buy (``finding_gains``);
    none without it."""
    found = _findings(Figures(shares, leads or Leads(), loader))
    summary = " ".join(part for part in (found[0].summary, set_aside_note, outside_steps_note) if part)
    return Recommendation(
        verdict=found[0].kind,
        input_bound=input_bound_verdict(shares.input),
        input_percent=shares.input,
        kernel_launch_percent=shares.kernel_launch,
        collectives_percent=shares.collectives,
        host_percent=shares.host,
        summary=summary,
        next_steps=[advice for finding in found for advice in finding.advice],
        evidence=[finding.to_json(predict(finding.kind) if predict else None) for finding in found],
        set_aside=set_aside_note,
        outside_steps=outside_steps_note,
    )
