"""One table of every benchmark's figures: stepscope's figure, its anchor (the peer tool and
its figure in the same run), the ratio, the goal and whether it holds ("within noise" where
the figures' recorded spread does not resolve it, see ``bench/goals.py``).

Reads the ``goals`` list each benchmark writes into ``bench/out/<name>.json`` (see
``bench/goals.py``), derives each ratio and verdict again from the raw figures, marks a
benchmark whose JSON is missing as "not run", and writes ``bench/out/summary.json`` and
``bench/out/summary.md``. ``--update-readme`` also rewrites the "Latest results" section of
``bench/README.md`` in place, between the two marker comments. ``make bench`` runs it last.

    python bench/summary.py [--out bench/out] [--update-readme [--readme bench/README.md]]

A JSON file that cannot be read, or whose goals are malformed, stops it with a one-line
error naming the file (exit 2): a table that silently drops a benchmark would read as
"nothing to report".
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from goals import HOLDS, MISSED, VALUE_MINUS_ANCHOR, WITHIN_NOISE, Goal

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
README = ROOT / "bench" / "README.md"
START_MARK = "<!-- bench-summary:start -->"
END_MARK = "<!-- bench-summary:end -->"

# Every benchmark ``make bench`` runs, in its order: the JSON's stem and the script.
BENCHMARKS: dict[str, str] = {
    "ingest": "bench/ingest.py",
    "tools": "bench/tools.py",
    "overhead": "bench/overhead.py",
    "capture_stop": "bench/capture_stop.py",
    "job_side": "bench/job_side.py",
    "install": "bench/install.py",
    "remote_stop": "bench/remote_stop.py",
    "diff": "bench/diff.py",
    "distributed": "bench/distributed.py",
    "critical_path": "bench/critical_path.py",
    "trace_viewer": "bench/trace_viewer.py",
    "trace_viewer_page": "bench/trace_viewer_page.py",
}
NOT_RUN = "not run"
NO_GOALS = "no goals in its JSON"
HEADER = ("benchmark", "figure", "stepscope", "anchor", "ratio", "goal", "holds")


class SummaryError(Exception):
    """A benchmark's JSON that cannot be summarised (the message names the file)."""


@dataclass(frozen=True)
class Row:
    """One line of the table; ``holds`` is "yes", "NO", "within noise", "not run" or "no goals in its JSON"."""

    benchmark: str
    figure: str
    value: float | None
    unit: str
    anchor: str
    anchor_value: float | None
    ratio: float | None
    goal: str
    holds: str


def rows_of(name: str, path: Path) -> list[Row]:
    """The rows of one benchmark's JSON: its goals, or one row saying why there are none."""
    if not path.is_file():
        return [Row(name, f"(run {BENCHMARKS.get(name, name)})", None, "", "", None, None, "", NOT_RUN)]
    try:
        document = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise SummaryError(f"{path}: not readable JSON ({str(error).splitlines()[0]})") from None
    goals = document.get("goals") if isinstance(document, dict) else None
    if goals is None:
        return [Row(name, "(written before goals were recorded: rerun it)", None, "", "", None, None, "", NO_GOALS)]
    if not isinstance(goals, list):
        raise SummaryError(f"{path}: 'goals' is not a list")
    if not goals:  # it ran, but the figure with an anchor was not measured (e.g. HTA missing)
        return [Row(name, "(ran, but measured no figure with a goal)", None, "", "", None, None, "", NOT_RUN)]
    rows = []
    for number, entry in enumerate(goals, 1):
        if not isinstance(entry, dict):
            raise SummaryError(f"{path}: goal {number} is not an object")
        try:
            item = Goal.from_json(entry)
        except ValueError as error:
            raise SummaryError(f"{path}: goal {number}: {error}") from None
        rows.append(Row(name, item.figure, item.value, item.unit, item.anchor, item.anchor_value, item.ratio, item.goal, item.verdict))
    return rows


def collect(out: Path) -> list[Row]:
    return [row for name in BENCHMARKS for row in rows_of(name, out / f"{name}.json")]


def number(value: float) -> str:
    """Three significant figures or more, without exponents for the sizes met here."""
    magnitude = abs(value)
    if magnitude >= 100:
        return f"{value:,.0f}"
    if magnitude >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}" if magnitude >= 0.1 or value == 0 else f"{value:.3g}"


def cells(row: Row) -> tuple[str, ...]:
    ours = f"{number(row.value)} {row.unit}" if row.value is not None else "-"
    if row.anchor and row.anchor_value is not None:
        anchor = f"{row.anchor}: {number(row.anchor_value)} {row.unit}"
    else:
        anchor = f"{row.anchor}: not measured" if row.anchor else "-"
    ratio = "-" if row.ratio is None else f"{row.ratio:+.2f} {row.unit}" if row.goal.startswith(VALUE_MINUS_ANCHOR) else f"{row.ratio:.2f}x"
    return (row.benchmark, row.figure, ours, anchor, ratio, row.goal or "-", row.holds)


def markdown(rows: list[Row]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "|".join("---" for _ in HEADER) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in cells(row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def counts(rows: list[Row]) -> str:
    held, missed, noisy = (sum(row.holds == verdict for row in rows) for verdict in (HOLDS, MISSED, WITHIN_NOISE))
    absent = sum(row.holds in (NOT_RUN, NO_GOALS) for row in rows)
    return f"{held} goals hold, {missed} missed, {noisy} within noise, {absent} benchmark(s) without figures"


def write_atomically(path: Path, text: str) -> None:
    """Beside the target, then renamed over it: a reader never sees half a table."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    temporary.replace(path)


def update_readme(readme: Path, table: str) -> None:
    try:
        text = readme.read_text()
    except OSError as error:
        raise SummaryError(f"{readme}: cannot read ({error.strerror})") from None
    start, end = text.find(START_MARK), text.find(END_MARK)
    if start < 0 or end < start:
        raise SummaryError(f"{readme}: no '{START_MARK}' ... '{END_MARK}' section to rewrite")
    write_atomically(readme, text[: start + len(START_MARK)] + "\n" + table + text[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT, help="where the benchmarks' JSON lies (default bench/out)")
    parser.add_argument("--update-readme", action="store_true", help="rewrite the README's 'Latest results' section")
    parser.add_argument("--readme", type=Path, default=README)
    args = parser.parse_args(argv)
    try:
        rows = collect(args.out)
        table = markdown(rows)
        summary = counts(rows)
        created = time.strftime("%Y-%m-%d %H:%M %Z")
        args.out.mkdir(parents=True, exist_ok=True)
        write_atomically(args.out / "summary.json", json.dumps({"created": created, "rows": [asdict(row) for row in rows]}, indent=1) + "\n")
        document = f"Benchmarks of {created}: {summary}.\n\n{table}"
        write_atomically(args.out / "summary.md", document)
        if args.update_readme:
            update_readme(args.readme, document)
    except SummaryError as error:
        print(f"bench/summary.py: {error}", file=sys.stderr)
        return 2
    print(table, end="")
    print(summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
