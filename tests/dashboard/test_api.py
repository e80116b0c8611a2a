"""The dashboard's JSON API against a real `stepscope serve` on loopback (docs/dashboard.md)."""

from __future__ import annotations

import csv
import functools
import io
import json
import shutil
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stepscope.analysis import applicability, run_tool, tool_names
from stepscope.dashboard.api.security import SECURITY_HEADERS
from stepscope.dashboard.jobs.worker import APPLIES_FILE, CHECKSUMS_FILE, RANK_FILE
from stepscope.render import render
from stepscope.trace.readers import load
from tests.support.dashboard.logdir import CPU_ONLY_HOST, GPU_HOSTS, TPU_SESSION
from tests.support.dashboard.server import DashboardServer
from tests.support.service_job import Job
from tests.support.traces import read_json, shared

TOOLS = (
    "overview_page",
    "input_pipeline_analyzer",
    "framework_op_stats",
    "kernel_stats",
    "op_profile",
    "memory_profile",
    "hlo_stats",
    "roofline_model",
    "graph_viewer",
    "memory_viewer",
    "flame_graph",
    "critical_path",
)


@functools.cache
def expected(path: Path, tool: str) -> dict:
    """What `stepscope report --tool T --format json` gives for the file, in this process."""
    return json.loads(render([run_tool(tool, load(path))], "json"))[tool]


def assert_secured(answer) -> None:
    """The security headers are on the answer (errors a route raises included)."""
    for name, value in SECURITY_HEADERS.items():
        assert answer.headers.get(name.lower()) == value, name


def profiles(logdir):
    return [("gpu", "v100_resnet_ns_resolution"), ("gpu", "alexnet_small"), (f"tpu/{TPU_SESSION}", "tpu_host"), (logdir.cpu_run, logdir.cpu_host)]


def test_runs_are_the_profiles_of_the_logdir(server, logdir):
    answer = server.get("/api/runs")
    assert answer.status == 200
    document = answer.json()
    assert document["logdir"] == str(logdir.root)
    # Runs by the layouts the fixture made; "linked" (outside the logdir) is absent.
    assert document["runs"] == [
        {"name": "broken", "hosts": ["worker0"]},
        {"name": logdir.cpu_run, "hosts": [logdir.cpu_host]},
        {"name": "cpu_only", "hosts": [CPU_ONLY_HOST]},
        {"name": logdir.before[0], "hosts": [logdir.before[1]]},
        {"name": logdir.after[0], "hosts": [logdir.after[1]]},
        {"name": "gpu", "hosts": sorted(GPU_HOSTS)},
        {"name": f"tpu/{TPU_SESSION}", "hosts": ["tpu_host"]},
    ]


def test_tools_of_a_host(server):
    answer = server.get("/api/tools", run="gpu", host="alexnet_small")
    assert answer.status == 200
    tools = answer.json()["tools"]
    assert [tool["name"] for tool in tools] == [*TOOLS, "trace_viewer"]
    assert tool_names() == list(TOOLS)
    # The registry's entries as `stepscope tools --format json` lists them (another process).
    listed = subprocess.run([sys.executable, "-m", "stepscope.cli", "tools", "--format", "json"], capture_output=True, text=True, check=True)
    assert tools == json.loads(listed.stdout)["tools"]
    by_name = {tool["name"]: tool for tool in tools}
    assert [option["name"] for option in by_name["op_profile"]["options"]] == ["device", "top_n"]
    assert by_name["trace_viewer"]["output"] == "index" and by_name["kernel_stats"]["output"] == "tables"


def test_tools_say_which_have_nothing_to_show(server, logdir):
    """What each tool has for the host's profile, once it is analysed (the rules per tool:
    tests/analysis/test_applicability.py). The GPU run's two hosts are two ranks, so its
    distributed view applies even though each host has one GPU; the CPU capture's run has
    one host of no device: one rank."""
    server.ready("/api/data", run="gpu", host="alexnet_small", tool="overview_page")
    gpu = server.get("/api/tools", run="gpu", host="alexnet_small").json()
    assert gpu["checked"] is True
    assert gpu["unavailable"] == {
        "memory_profile": applicability.NO_MEMORY_EVENTS,
        "hlo_stats": applicability.NO_XLA_OPS,
        "graph_viewer": applicability.NO_XLA_MODULES,
        "memory_viewer": applicability.NO_XLA_MODULES,
    }
    server.ready("/api/data", run=logdir.cpu_run, host=logdir.cpu_host, tool="overview_page")
    cpu = server.get("/api/tools", run=logdir.cpu_run, host=logdir.cpu_host).json()
    assert cpu["checked"] is True and cpu["unavailable"]["distributed"] == applicability.ONE_RANK
    assert cpu["unavailable"]["kernel_stats"] == applicability.NO_GPU_KERNELS


def test_tool_options_are_computed_on_demand_as_the_report_does(server):
    """op_profile with options (not cached by the analysis): the same JSON as `stepscope
    report --option ...` in another process; tables and CSV follow the options too."""
    params = dict(run=f"tpu/{TPU_SESSION}", host="tpu_host", tool="op_profile")
    path = shared("xplane/tpu_v_inference_4chips.xplane.pb")
    command = [sys.executable, "-m", "stepscope.cli", "report", str(path), "--tool", "op_profile", "--format", "json"]
    report = subprocess.run([*command, "--option", "top_n=1", "--option", "device=all"], capture_output=True, text=True, check=True)
    default = server.ready("/api/data", **params).json()
    answer = server.ready("/api/data", **params, top_n="1", device="all")
    assert answer.status == 200, answer.body[:300]
    assert answer.json() == json.loads(report.stdout)["op_profile"]
    assert answer.json() != default and answer.json()["device"] == "all devices"
    # The default values are the cached default result.
    assert server.ready("/api/data", **params, top_n="10", device="").json() == default
    # The flat op table does not fold: the same rows whatever top_n, but all four chips'.
    tables = server.ready("/api/tables", **params, top_n="1", device="all").json()["tables"]
    (ops,) = [table for table in tables if table["name"] == "ops"]
    all_ops = run_tool("op_profile", load(path), device="all").tables()[0]
    assert len(ops["rows"]) == len(all_ops.rows)
    csv_answer = server.ready("/api/csv", **params, top_n="1", device="all", table="ops")
    assert len(list(csv.reader(io.StringIO(csv_answer.body.decode())))) == 1 + len(all_ops.rows)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"top_n": "0"}, "op_profile: option top_n must be at least 1, not 0"),
        ({"top_n": "many"}, "op_profile: option top_n must be an integer, not 'many'"),
        ({"device": "/device:TPU:9"}, "op_profile: no ops on device '/device:TPU:9'"),
    ],
)
def test_bad_tool_options_are_one_line_400s(server, options, message):
    answer = server.ready("/api/data", run=f"tpu/{TPU_SESSION}", host="tpu_host", tool="op_profile", **options)
    assert answer.status == 400
    assert answer.json()["error"].startswith(message)
    assert_secured(answer)
    assert server.get("/api/runs").status == 200  # still serving


@pytest.mark.parametrize("tool", TOOLS)
def test_tool_data_is_the_reports_json(server, logdir, tool):
    for run, host in profiles(logdir):
        answer = server.ready("/api/data", run=run, host=host, tool=tool)
        assert answer.status == 200, answer.body[:300]
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == expected(logdir.path(run, host), tool), (run, host)


def test_tool_data_is_computed_once_and_kept_across_restarts(server, logdir, tmp_path):
    """Every tool of a profile comes from one analysis, cached under --cache-dir (never in
    the logdir); a new server on the same cache answers at once, without a 202."""
    params = dict(run="gpu", host="alexnet_small")
    for tool in TOOLS:
        assert server.ready("/api/data", **params, tool=tool).status == 200
    cache = Path(server.cache_dir) / "analysis"
    folders = [folder for folder in cache.iterdir() if folder.is_dir() and "." not in folder.name]  # not <key>.exports
    files = sorted(
        [f"{t}.json" for t in (*TOOLS, "trace_viewer")]
        + [f"{t}.tables.json" for t in (*TOOLS, "trace_viewer")]
        + ["trace_index", RANK_FILE, APPLIES_FILE, CHECKSUMS_FILE]
    )
    assert all(sorted(f.name for f in folder.iterdir()) == files for folder in folders)
    assert not [path for path in logdir.root.rglob("*") if path.name.startswith(TOOLS)]  # nothing written to the logdir
    second = DashboardServer(logdir.root, server.cache_dir)
    try:
        for tool in TOOLS:
            answer = second.get("/api/data", **params, tool=tool)
            assert answer.status == 200
            assert answer.json() == expected(logdir.path("gpu", "alexnet_small"), tool)
    finally:
        second.stop()


def test_tables_and_csv_match_and_count_the_traces_kernels(server, logdir):
    """The kernels table and its CSV: every kernel launch of the raw trace, counted by the
    standard library's json, is one occurrence in exactly one row."""
    params = dict(run="gpu", host="v100_resnet_ns_resolution", tool="kernel_stats")
    (table,) = server.ready("/api/tables", **params).json()["tables"]
    assert table["name"] == "kernels"
    keys = [column["key"] for column in table["columns"]]
    raw = read_json(shared(GPU_HOSTS["v100_resnet_ns_resolution"]))
    kernels = [event for event in raw["traceEvents"] if event.get("cat") == "kernel" and event.get("ph") == "X"]
    occurrences = keys.index("occurrences")
    assert sum(row[occurrences] for row in table["rows"]) == len(kernels)
    assert sum(row[keys.index("total_duration_ps")] for row in table["rows"]) == sum(round(event["dur"] * 1_000_000) for event in kernels)

    answer = server.get("/api/csv", **params, table="kernels")
    assert answer.status == 200
    assert answer.headers["content-type"].startswith("text/csv")
    assert answer.headers["content-disposition"] == 'attachment; filename="gpu_v100_resnet_ns_resolution_kernel_stats_kernels.csv"'
    rows = list(csv.reader(io.StringIO(answer.body.decode())))
    assert rows[0] == keys
    assert len(rows) == len(table["rows"]) + 1
    assert sum(int(row[occurrences]) for row in rows[1:]) == len(kernels)


def test_unknown_table_run_host_and_tool_are_404(server):
    base = dict(run="gpu", host="alexnet_small", tool="kernel_stats")
    server.ready("/api/data", **base)
    for params in (
        {**base, "run": "nope"},
        {**base, "host": "nope"},
        {**base, "tool": "nope"},
        {"run": "gpu"},
    ):
        answer = server.get("/api/data", **params)
        assert answer.status == 404, params
        assert list(answer.json()) == ["error"]
    answer = server.get("/api/csv", **base, table="nope")
    assert answer.status == 404
    assert "kernels" in answer.json()["error"]  # names the tables there are
    assert server.get("/api/nothing").status == 404
    assert server.get("/api/capture/0123").status == 404


TRAVERSALS = [
    "/api/data?run=..%2F..&host=etc&tool=overview_page",
    "/api/data?run=gpu&host=..%2F..%2F..%2F..%2Fetc%2Fpasswd&tool=overview_page",
    "/api/data?run=%2Fetc&host=passwd&tool=overview_page",
    "/api/data?run=linked&host=secret&tool=overview_page",
    "/api/csv?run=gpu&host=alexnet_small&tool=kernel_stats&table=..%2F..%2Fetc%2Fpasswd",
    "/api/tools?run=..&host=..",
    "/api/flame?run=gpu&host=..%2F..%2F..%2Fetc%2Fpasswd",
    "/../../../../etc/passwd",
    "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/assets/..%2f..%2f..%2f..%2f..%2fpyproject.toml",
    "/..%2f..%2f..%2f..%2fetc%2fpasswd",
    "//etc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_no_parameter_reaches_outside_the_logdir(server, path):
    # The CSV's table is looked up once the analysis is done (202 before): wait for it, so
    # the answer does not depend on which tests ran first.
    server.ready("/api/data", run="gpu", host="alexnet_small", tool="kernel_stats")
    answer = server.request("GET", path)
    assert answer.status in (400, 404), (path, answer.status)
    assert b"root:" not in answer.body and b"[project]" not in answer.body


def test_a_corrupt_profile_fails_alone(server, logdir):
    answer = server.ready("/api/data", run="broken", host="worker0", tool="overview_page")
    assert answer.status == 422
    assert_secured(answer)
    message = answer.json()["error"]
    assert message.startswith(str(logdir.root / "broken" / "worker0.pt.trace.json") + ": ")
    assert "\n" not in message
    # Asked again: the same answer, from the cache, and the other runs still work.
    assert server.get("/api/data", run="broken", host="worker0", tool="overview_page").json()["error"] == message
    assert server.ready("/api/data", run="gpu", host="alexnet_small", tool="overview_page").status == 200
    assert server.get("/api/runs").status == 200


def test_a_burst_of_200_requests_from_20_clients_is_all_answered(server, logdir):
    gpu = dict(run="gpu", host="alexnet_small")
    for tool in TOOLS:
        server.ready("/api/data", **gpu, tool=tool)
    calls = [
        ("/api/runs", {}),
        ("/api/tools", gpu),
        *(("/api/data", {**gpu, "tool": tool}) for tool in TOOLS),
        ("/api/csv", {**gpu, "tool": "kernel_stats", "table": "kernels"}),
    ]
    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(lambda index: (index, server.get(calls[index % len(calls)][0], **calls[index % len(calls)][1])), range(200)))
    assert [answer.status for _, answer in answers] == [200] * 200
    for index, answer in answers:
        path, params = calls[index % len(calls)]
        if path == "/api/data":
            assert answer.json() == expected(logdir.path("gpu", "alexnet_small"), params["tool"])


def test_host_header_of_another_name_is_refused(server):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 gets nothing."""
    answer = server.request("GET", "/api/runs", headers={"Host": "evil.example"})
    assert answer.status == 400
    assert server.request("GET", "/api/runs", headers={"Host": f"localhost:{server.port}"}).status == 200


@pytest.mark.parametrize(
    ("body", "content_type", "status", "words"),
    [
        (b"{}", "application/json", 400, "addresses"),
        (b'{"addresses": []}', "application/json", 400, "addresses"),
        (b'{"addresses": ["127.0.0.1:1"], "duration_ms": -5}', "application/json", 400, "duration_ms"),
        (b'{"addresses": ["127.0.0.1:1"], "host_tracer_level": 7}', "application/json", 400, "host_tracer_level"),
        (b'{"addresses": ["127.0.0.1:1"], "speed": 1}', "application/json", 400, "speed"),
        (b"[1, 2", "application/json", 400, "JSON"),
        (b'{"addresses": ["127.0.0.1:1"]}', "text/plain", 415, "application/json"),
    ],
)
def test_bad_capture_requests(server, body, content_type, status, words):
    answer = server.request("POST", "/api/capture", body=body, headers={"Content-Type": content_type})
    assert answer.status == status
    assert words in answer.json()["error"]


def test_the_server_listens_on_loopback_only(server):
    """/proc/net/tcp lists the listening socket's local address: 0100007F is 127.0.0.1."""
    listening = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    ours = [fields[1] for fields in listening if fields[3] == "0A" and int(fields[1].split(":")[1], 16) == server.port]
    assert ours == [f"0100007F:{server.port:04X}"]


def test_serve_errors_are_one_line_and_status_2(tmp_path):
    missing = tmp_path / "missing"
    result = subprocess.run([sys.executable, "-m", "stepscope.cli", "serve", "--logdir", str(missing)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr == f"stepscope: error: {missing}: not a directory (give the log directory the profiles are written to)\n"
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "stepscope.cli", "serve", "--logdir", str(tmp_path), "--port", str(port)], capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 2
    assert result.stderr.startswith(f"stepscope: error: cannot listen on 127.0.0.1:{port}: ")
    assert result.stderr.count("\n") == 1


# The tests below add runs to the logdir: they come last in this module.


def test_a_new_run_appears_and_shows_progress_without_blocking(server, logdir):
    """A file written after the server started is listed within a second or two; its first
    request starts the analysis (202 with progress), other requests are answered meanwhile."""
    (logdir.root / "late").mkdir()
    late = logdir.root / "late" / "a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"
    shutil.copy(shared("kineto/a100_ddp_cnn_rank0_of_2.pt.trace.json.gz"), late)
    server.wait_for_run("late")
    params = dict(run="late", host="a100_ddp_cnn_rank0_of_2", tool="overview_page")
    first = server.get("/api/data", **params)
    assert first.status == 202
    assert first.json()["state"] == "queued"
    assert_secured(first)
    answered_meanwhile = 0
    seen = []
    while (answer := server.get("/api/data", **params)).status == 202:
        progress = answer.json()
        assert progress["state"] in ("queued", "loading", "analysing")
        assert 0 <= progress["progress"] <= 1
        seen.append(progress["progress"])
        answered_meanwhile += server.get("/api/runs").status == 200
        time.sleep(0.05)
    assert answer.status == 200
    assert answer.json() == expected(late, "overview_page")
    assert seen == sorted(seen)  # progress only goes forward
    assert answered_meanwhile == len(seen) >= 1


def test_capture_from_the_api_makes_a_new_run(server, logdir, tmp_path):
    job = Job(tmp_path, "dash")
    body = json.dumps({"addresses": [job.address], "duration_ms": 600, "host_tracer_level": 1, "attempts": 3}).encode()
    started = server.request("POST", "/api/capture", body=body, headers={"Content-Type": "application/json"})
    assert started.status == 202
    capture_id = started.json()["id"]
    deadline = time.monotonic() + 120
    while (status := server.get(f"/api/capture/{capture_id}").json())["state"] == "running":
        assert status["elapsed_ms"] >= 0 and status["duration_ms"] == 600
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert "job finished" in job.finish()
    host = "127.0.0.1_" + job.address.split(":")[1]
    assert status["state"] == "done"
    assert status["results"] == [{"address": job.address, "ok": True, "host": host, "message": "ok", "attempts": status["results"][0]["attempts"]}]
    session = status["run"]
    assert (logdir.root / "plugins/profile" / session / f"{host}.xplane.pb").is_file()
    server.wait_for_run(session)
    overview = server.ready("/api/data", run=session, host=host, tool="overview_page").json()
    # 600 ms of the job's 2 ms steps (each a `stepscope.step`, found by its step_num): dozens.
    assert overview["step_source"] == "step_num"
    assert len(overview["steps"]) >= 10


def _cli_diff(base: Path, new: Path, *args: str) -> str:
    """`stepscope diff BASE NEW --format ...` in another process."""
    command = [sys.executable, "-m", "stepscope.cli", "diff", str(base), str(new), *args]
    return subprocess.run(command, capture_output=True, text=True, check=True, timeout=300).stdout


def test_the_diff_of_two_hosts_is_the_cli_diff(server, logdir):
    """/api/diff of the gpu run's two hosts (resnet as base, alexnet as new): the JSON of
    `stepscope diff --format json` on the same two files, but for how each run is named
    (the API: run/host; the CLI: its path). Tables and CSV (tool=diff) follow it."""
    params = dict(base_run="gpu", base_host="v100_resnet_ns_resolution", new_run="gpu", new_host="alexnet_small")
    answer = server.ready("/api/diff", **params)
    assert answer.status == 200, answer.body[:300]
    document = answer.json()
    base_path, new_path = logdir.path("gpu", "v100_resnet_ns_resolution"), logdir.path("gpu", "alexnet_small")
    cli = json.loads(_cli_diff(base_path, new_path, "--format", "json"))["diff"]
    assert (document["base"], document["new"]) == ("gpu/v100_resnet_ns_resolution", "gpu/alexnet_small")
    assert (cli["base"], cli["new"]) == (str(base_path), str(new_path))
    assert {k: v for k, v in document.items() if k not in ("base", "new")} == {k: v for k, v in cli.items() if k not in ("base", "new")}
    # The page's tables and CSV: run/host is the new one, base_run/base_host the base.
    page = dict(run="gpu", host="alexnet_small", tool="diff", base_run="gpu", base_host="v100_resnet_ns_resolution")
    tables = {table["name"]: table for table in server.ready("/api/tables", **page).json()["tables"]}
    assert len(tables["kernels"]["rows"]) == len(document["kernels"]) and len(tables["ops"]["rows"]) == len(document["ops"])
    cli_csv = list(csv.reader(io.StringIO(_cli_diff(base_path, new_path, "--format", "csv"))))
    rows = list(csv.reader(io.StringIO(server.get("/api/csv", **page, table="kernels").body.decode())))
    assert rows[0] == [column["key"] for column in tables["kernels"]["columns"]]
    assert len(rows) == 1 + len(document["kernels"])
    kernels = [row[0] for row in rows[1:]]
    assert kernels == [row["name"] for row in document["kernels"]]
    assert any(kernels[0] in line for line in map(",".join, cli_csv))


def test_diff_errors_are_one_line_and_the_server_keeps_serving(server):
    good = dict(base_run="gpu", base_host="alexnet_small", new_run="gpu", new_host="alexnet_small")
    # The page's data, tables and CSV of tool=diff: run/host is the new profile.
    page = dict(run="gpu", host="alexnet_small", tool="diff")
    for path, params, status, fragment in (
        ("/api/diff", {**good, "base_run": "nope"}, 404, "the base profile (base_run='nope'): no run named 'nope'"),
        ("/api/diff", {**good, "new_host": "nope"}, 404, "the new profile (new_run='gpu'): run 'gpu' has no host 'nope'"),
        ("/api/diff", {k: v for k, v in good.items() if k != "new_run"}, 400, "diff: give new_run"),
        ("/api/diff", {k: v for k, v in good.items() if not k.startswith("base")}, 400, "diff: give base_run, base_host (base_run/base_host: the run and host"),
        ("/api/diff", {**good, "base_run": "broken", "base_host": "worker0"}, 422, "broken"),
        # No base, or one not in the logdir: never a diff against a run picked instead.
        ("/api/data", page, 400, "diff: give base_run, base_host"),
        ("/api/tables", {**page, "base_run": "nope", "base_host": "x"}, 404, "the base profile (base_run='nope')"),
        ("/api/csv", {**page, "base_run": "gpu", "table": "kernels"}, 400, "diff: give base_host"),
    ):
        answer = server.ready(path, **params)
        assert answer.status == status, (params, answer.body[:300])
        assert list(answer.json()) == ["error"] and "\n" not in answer.json()["error"] and fragment in answer.json()["error"], answer.json()
    # A host against itself: nothing changed, and the server still answers.
    same = server.ready("/api/diff", **good).json()
    assert same["verdict"].startswith("No significant change in step time")
    assert all(row["change_us"] == 0 for row in same["kernels"])


def test_the_distributed_view_of_a_run_is_the_local_engines(server, logdir):
    """/api/distributed of the gpu run (two hosts, two ranks): the map ran in the analysis
    workers, the reduce in the server, and the answer is the one the local engine gives on
    the same folder in this process, number for number. Tables and CSV (tool=distributed)
    follow it; the host parameter the page sends does not matter."""
    from stepscope.engines import analyse_run
    from stepscope.trace.logdir import discover

    answer = server.ready("/api/distributed", run="gpu")
    assert answer.status == 200, answer.body[:300]
    document = answer.json()
    (run,) = [run for run in discover(logdir.root) if run.name == "gpu"]
    assert document == json.loads(json.dumps(analyse_run(run, workers=1).to_json()))
    # Each rank's host is the run's name for its file (the host selector's, the trace viewer's).
    assert sorted(row["file_host"] for row in document["ranks"]) == sorted(GPU_HOSTS)
    for row in document["steps"]:
        overview = server.ready("/api/data", run="gpu", host=document["ranks"][row["rank"]]["file_host"], tool="overview_page").json()
        step = next(step for step in overview["steps"] if step["step"] == row["step"])
        assert (row["trace_start_ps"], row["step_time_ps"]) == (step["start_ps"], step["step_time_ps"])
    page = dict(run="gpu", host="alexnet_small", tool="distributed")
    tables = {table["name"]: table for table in server.ready("/api/tables", **page).json()["tables"]}
    assert list(tables) == ["ranks", "stragglers", "collectives", "steps", "job_steps", "straggle_removed"]
    assert len(tables["steps"]["rows"]) == len(document["steps"]) and len(tables["ranks"]["rows"]) == 2
    csv_answer = server.get("/api/csv", **page, table="steps")
    assert csv_answer.headers["content-disposition"] == 'attachment; filename="gpu_distributed_steps.csv"'
    rows = list(csv.reader(io.StringIO(csv_answer.body.decode())))
    assert rows[0] == [column["key"] for column in tables["steps"]["columns"]] and len(rows) == 1 + len(document["steps"])
    # Microseconds in the tables: ps / 1e6 of the JSON's step times.
    step_us = rows[0].index("step_time_us")
    assert [float(row[step_us]) for row in rows[1:]] == pytest.approx([row["step_time_ps"] / 1e6 for row in document["steps"]])


def test_distributed_view_errors_are_one_line_and_the_server_keeps_serving(server):
    for params, status, fragment in (
        ({"run": "nope"}, 404, "no run named 'nope'"),
        ({}, 404, "give run"),
        # Its only host cannot be read: no rank to show, and the reason of the first.
        ({"run": "broken"}, 422, "broken: no rank could be analysed (first: "),
    ):
        answer = server.ready("/api/distributed", **params)
        assert answer.status == status, (params, answer.body[:300])
        assert list(answer.json()) == ["error"] and "\n" not in answer.json()["error"] and fragment in answer.json()["error"], answer.json()
    assert server.ready("/api/csv", run="gpu", host="alexnet_small", tool="distributed", table="nope").status == 404  # once analysed
    # A run of one host is a run of one rank (its distributedInfo's); the server still answers.
    single = server.ready("/api/distributed", run="cpu_only").json()
    info = read_json(shared(f"kineto/{CPU_ONLY_HOST}.pt.trace.json.gz"))["distributedInfo"]
    assert [(row["rank"], row["file_host"]) for row in single["ranks"]] == [(info["rank"], CPU_ONLY_HOST)] == [(34, CPU_ONLY_HOST)]
    assert single["world_size"] == info["world_size"] == 300 and single["stragglers"] == []
    assert server.get("/api/runs").status == 200
