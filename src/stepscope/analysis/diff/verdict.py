"""The diff's verdict: one sentence saying how the step changed and what moved it.

"Step -31.2% (12.40 -> 8.53 ms, 95% CI -35.0% to -27.1%): input time fell from 3.96 ms
to 66.1 us per step; largest kernel change: volta_sgemm_128x64_nn +1.20 ms per step."

- No significant change (the step time's interval holds 0): it says so, with the
  interval, and stops: explaining noise would invent a cause.
- Otherwise the step's change, then the breakdown category whose mean time per step
  changed most (among those whose change is not noise), then the kernel whose total time
  changed most per step (ops when the profile has no kernels: a CPU run), so the sentence
  points from "how much" to "where" to "which". Per step, not in total: runs of different
  lengths would otherwise name a kernel whose total fell only because it ran fewer steps.
- Where a run has a single steady-state step the noise cannot be measured; the verdict
  says so instead of giving an interval.
"""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.analysis.diff.row_changes import NEW, VANISHED, KernelChange, OpChange, TimeChange, change_size
from stepscope.analysis.diff.step_change import CONFIDENCE, Change


def duration(us: float) -> str:
    """A time for a sentence: ms from 1 ms up, else us."""
    return f"{us / 1000:,.2f} ms" if abs(us) >= 1000 else f"{us:,.1f} us"


def _interval(change: Change) -> str:
    if change["ci_low_percent"] is None or change["ci_high_percent"] is None:
        return "one steady step in a run: noise not measured" if change["significant"] is None else "no interval"
    return f"{CONFIDENCE:.0%} CI {change['ci_low_percent']:+.1f}% to {change['ci_high_percent']:+.1f}%"


def _category(categories: Sequence[tuple[str, Change]]) -> str:
    """The category with the largest change of mean time per step that is not noise."""
    candidates = [(abs(change["change"]), name, change) for name, change in categories if change["significant"] is not False and change["change"]]
    if not candidates:
        return "no category of the breakdown changed beyond noise"
    _, name, change = max(candidates, key=lambda candidate: candidate[0])
    moved = "rose" if change["change"] > 0 else "fell"
    return f"{name.replace('_', ' ')} time {moved} from {duration(change['base'])} to {duration(change['new'])} per step"


def _amount(per_step: float | None, total: float) -> str:
    """A row's time per step where both runs have steps, else its total."""
    return f"{duration(per_step)} per step" if per_step is not None else f"{duration(total)} in total"


def _row(label: str, name: str, row: TimeChange) -> str:
    if row["status"] == NEW:
        return f"new {label}: {name} ({_amount(row['new_per_step_us'], row['new_total_us'])})"
    if row["status"] == VANISHED:
        return f"{label} gone: {name} (was {_amount(row['base_per_step_us'], row['base_total_us'])})"
    per_step = row["change_per_step_us"]
    change, unit = (per_step, "per step") if per_step is not None else (row["change_us"], "in total")
    sign = "+" if change >= 0 else "-"
    return f"largest {label} change: {name} {sign}{duration(abs(change))} {unit}"


def verdict(step: Change, categories: Sequence[tuple[str, Change]], ops: Sequence[OpChange], kernels: Sequence[KernelChange]) -> str:
    """The sentence (see the module docstring); ``categories``: (name, change) in the
    breakdown's order."""
    times = f"{duration(step['base'])} -> {duration(step['new'])}"
    if step["significant"] is False or not step["change"]:
        percent = f"{step['change_percent']:+.1f}%, " if step["change_percent"] is not None else ""
        return f"No significant change in step time ({times}, {percent}{_interval(step)})."
    percent = (
        f"{step['change_percent']:+.1f}%" if step["change_percent"] is not None else f"{'+' if step['change'] > 0 else '-'}{duration(abs(step['change']))}"
    )
    parts = [_category(categories)]
    moved = [row for row in kernels if change_size(row)]
    if moved:
        parts.append(_row("kernel", moved[0]["name"], moved[0]))
    else:
        moved_ops = [row for row in ops if change_size(row)]
        if moved_ops:
            parts.append(_row("op", moved_ops[0]["name"], moved_ops[0]))
    return f"Step {percent} ({times}, {_interval(step)}): " + "; ".join(parts) + "."
