"""Runs the ray engine on the cases the test names, in one local Ray session, and writes
each result's JSON; run by tests/engines/test_ray.py inside a private network namespace
(Ray's servers listen on every interface, and Ray has no option to bind loopback only).

    python -m tests.support.ray_driver OUT.json NAME=PATH_OR_URL ... [--cli NAME=URL]

A ``--cli`` case goes through ``stepscope distributed --engine ray --format json`` in this
process (attached to the same session), a plain one through ``engines.analyse_run``.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import ray

from stepscope import cli
from stepscope.engines import RAY, analyse_run
from stepscope.engines.ray_engine import LOOPBACK
from stepscope.trace.logdir import discover
from stepscope.trace.remote import discover_url, is_url

CPUS = 2


def main(out: Path, cases: list[str]) -> None:
    ray.init(num_cpus=CPUS, include_dashboard=False, _node_ip_address=LOOPBACK, log_to_driver=False)
    results: dict[str, dict] = {}
    through_cli = False
    for case in cases:
        if case == "--cli":
            through_cli = True
            continue
        name, _, where = case.partition("=")
        if through_cli:
            output = out.with_name(f"{name}.json")
            code = cli.main(["distributed", where, "--engine", RAY, "--format", "json", "--output", str(output)])
            results[name] = {"exit": code, "result": json.loads(output.read_text())["distributed"]}
            through_cli = False
            continue
        run = (discover_url(where) if is_url(where) else discover(where))[0]
        finished: list[int] = []
        result = analyse_run(run, RAY, progress=functools.partial(finished.append, 1))
        results[name] = {"result": result.to_json(), "progress": len(finished), "resources": ray.cluster_resources().get("CPU")}
    out.write_text(json.dumps(results))
    ray.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
