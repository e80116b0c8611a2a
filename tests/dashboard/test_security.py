"""Who `stepscope serve` answers (docs/security.md): Host names, the access token, same-origin
state changes and the security headers, against real servers.

Servers here listen on 127.0.0.2 (Linux routes all of 127/8 to lo), so the bound address is
not one of the loopback names allowed anyway. A server bound to every interface (0.0.0.0)
runs only inside a private network namespace (``unshare -n``) where nothing but loopback
exists; a driver script started there runs the servers and the requests and reports back.
"""

from __future__ import annotations

import http.client
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from starlette.requests import Request

from stepscope.dashboard.api.app import STATIC_DIR
from stepscope.dashboard.api.security import CONTENT_SECURITY_POLICY, Access, origin_problem
from stepscope.errors import StepscopeError
from tests.support.dashboard.server import DashboardServer
from tests.support.namespaces import NAMESPACE_PROBLEM

ADDRESS = "127.0.0.2"
TOKEN_NOTE = " (token required: open this address once and the browser keeps it in a cookie)"
HEADERS = {
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "content-security-policy": CONTENT_SECURITY_POLICY,
}
JSON = {"Content-Type": "application/json"}
# A capture that must fail for lack of a profiler server, quickly: port 1 refuses.
NO_JOB = json.dumps({"addresses": ["127.0.0.1:1"], "duration_ms": 100, "attempts": 1}).encode()


def serve(logdir: Path, cache: Path, *args: str) -> DashboardServer:
    return DashboardServer(logdir, cache, *args, host=ADDRESS)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("security") / "logs"


@pytest.fixture(scope="module")
def plain(logdir, tmp_path_factory):
    """The default rules on a loopback address: no token."""
    logdir.mkdir(exist_ok=True)
    served = serve(logdir, tmp_path_factory.mktemp("cache"))
    yield served
    served.stop()


@pytest.fixture(scope="module")
def with_token(logdir, tmp_path_factory):
    """A token asked for on loopback (a machine others log in to), and one more Host name."""
    logdir.mkdir(exist_ok=True)
    served = serve(logdir, tmp_path_factory.mktemp("cache"), "--token", "--allow-host", "dash.lan")
    yield served
    served.stop()


def asset_path() -> str:
    """A script the built page loads (make test builds the page before the tests)."""
    index = (STATIC_DIR / "index.html").read_text()
    return "/" + re.search(r'src="\./(assets/[^"]+\.js)"', index).group(1)


# ------------------------------------------------------------------ Host names


def test_loopback_startup_line_is_unchanged(plain, logdir):
    assert plain.line == f"stepscope: serving {logdir} at http://{ADDRESS}:{plain.port}/"
    assert plain.token is None


@pytest.mark.parametrize(
    "host", [f"{ADDRESS}:{{port}}", ADDRESS, "localhost:{port}", "localhost", "127.0.0.1:{port}", "[::1]:{port}", "LOCALHOST:{port}", "localhost.:8080"]
)
def test_the_bound_address_and_loopback_names_are_answered(plain, host):
    """With or without the port; any port (an ssh tunnel's local port differs)."""
    answer = plain.request("GET", "/api/runs", headers={"Host": host.format(port=plain.port)})
    assert answer.status == 200, answer.body
    assert answer.json()["runs"] == []


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", f"{ADDRESS}.evil.example:{{port}}", "localhost.evil.example", "dash.lan:{port}", ""])
def test_other_host_names_are_refused(plain, host):
    """DNS rebinding: a page on evil.example whose name now leads to this machine."""
    answer = plain.request("GET", "/api/runs", headers={"Host": host.format(port=plain.port)})
    assert answer.status == 400
    assert "--allow-host" in answer.json()["error"]


def test_allow_host_adds_a_name(with_token):
    assert with_token.request("GET", "/api/runs", headers={"Host": f"dash.lan:{with_token.port}", "Authorization": f"Bearer {with_token.token}"}).status == 200
    assert with_token.request("GET", "/api/runs", headers={"Host": "evil.example", "Authorization": f"Bearer {with_token.token}"}).status == 400


# ------------------------------------------------------------------ the token


def test_token_startup_line(with_token, logdir):
    assert re.fullmatch(r"[0-9a-f]{48}", with_token.token)
    assert with_token.line == f"stepscope: serving {logdir} at http://{ADDRESS}:{with_token.port}/?token={with_token.token}{TOKEN_NOTE}"


def test_without_the_token_everything_is_refused(with_token):
    for path in ("/", "/api/runs", asset_path(), "/api/capture/0123"):
        answer = with_token.request("GET", path)
        assert answer.status == 403, path
        assert "?token=" in answer.json()["error"]
        assert "set-cookie" not in answer.headers
    assert with_token.request("POST", "/api/capture", body=NO_JOB, headers=JSON).status == 403


def test_the_token_sets_a_cookie_that_lets_the_page_in(with_token):
    page = with_token.request("GET", f"/?token={with_token.token}")
    assert page.status == 200 and page.body.startswith(b"<!doctype html>")
    cookie = page.headers["set-cookie"]
    assert cookie == f"stepscope-token-{with_token.port}={with_token.token}; Path=/; HttpOnly; SameSite=Strict"
    jar = cookie.split(";")[0]
    # The page's own requests carry the cookie alone.
    for path in ("/", "/api/runs", asset_path()):
        answer = with_token.request("GET", path, headers={"Cookie": jar})
        assert answer.status == 200, path
        assert "set-cookie" not in answer.headers  # set once, by the ?token= answer
    # Scripts: ?token= on any request, or the header.
    answer = with_token.request("GET", f"/api/runs?token={with_token.token}")
    assert answer.status == 200 and answer.headers["set-cookie"] == cookie
    assert with_token.request("GET", "/api/runs", headers={"Authorization": f"Bearer {with_token.token}"}).status == 200


@pytest.mark.parametrize(
    "how",
    [
        {"path": "/api/runs?token=0123"},
        {"path": "/api/runs?token="},
        {"headers": {"Cookie": "stepscope-token-{port}=0123"}},
        {"headers": {"Cookie": "stepscope-token-1={token}"}},  # another server's cookie name
        {"headers": {"Authorization": "Bearer 0123"}},
        {"headers": {"Authorization": "Basic {token}"}},
    ],
)
def test_a_wrong_token_is_refused(with_token, how):
    path = how.get("path", "/api/runs")
    headers = {name: value.format(port=with_token.port, token=with_token.token) for name, value in how.get("headers", {}).items()}
    answer = with_token.request("GET", path, headers=headers)
    assert answer.status == 403
    assert "set-cookie" not in answer.headers


def test_a_stale_cookie_says_the_token_changed(with_token):
    answer = with_token.request("GET", "/", headers={"Cookie": f"stepscope-token-{with_token.port}={'0' * 48}"})
    assert answer.status == 403
    assert "a new one is made at every start" in answer.json()["error"]


# ------------------------------------------------------------------ state changes and other sites


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_capture_takes_only_post(plain, method):
    answer = plain.request(method, "/api/capture", body=NO_JOB if method != "GET" else None, headers=JSON)
    assert answer.status == 405
    assert answer.headers["allow"] == "POST"
    assert "POST" in answer.json()["error"]


@pytest.mark.parametrize(
    ("body", "content_type"),
    [(b"addresses=127.0.0.1%3A1", "application/x-www-form-urlencoded"), (b"addresses=127.0.0.1:1", "multipart/form-data; boundary=x"), (NO_JOB, "text/plain")],
)
def test_capture_takes_only_json(plain, body, content_type):
    """What an HTML form on another site can send (no preflight): never accepted."""
    answer = plain.request("POST", "/api/capture", body=body, headers={"Content-Type": content_type})
    assert answer.status == 415
    assert "application/json" in answer.json()["error"]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        # 50,000 "[": past the decoder's recursion limit (~1,000 levels); 100,000 of them
        # were a plain-text 500 (RecursionError). Now 100 kB is over the size limit first.
        (b"[" * 50_000, 400, "the capture request is nested too deeply"),
        (b"[" * 100_000, 413, "the capture request is 97.7 KiB, more than 64.0 KiB"),  # 100,000 / 1024
        (b'{"addresses": [', 400, "the capture request is not valid JSON"),
    ],
)
def test_a_bad_capture_body_gets_one_line(plain, body, status, says):
    answer = plain.request("POST", "/api/capture", body=body, headers=JSON)
    assert answer.status == status, answer.body[:200]
    assert answer.json() == {"error": says}


def test_a_capture_body_is_refused_by_its_declared_length(plain):
    """400 MB declared, 1 byte sent: answered at once from Content-Length (the server never
    waits for, nor holds, the 400 MB)."""
    connection = http.client.HTTPConnection(ADDRESS, plain.port, timeout=10)
    try:
        connection.putrequest("POST", "/api/capture")
        for name, value in {**JSON, "Content-Length": str(400 << 20)}.items():
            connection.putheader(name, value)
        connection.endheaders(b"{")
        response = connection.getresponse()
        assert response.status == 413
        assert json.loads(response.read()) == {"error": "the capture request is 400.0 MiB, more than 64.0 KiB"}
    finally:
        connection.close()


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "https://evil.example"},
        {"Origin": "null"},  # a sandboxed frame or a file:// page
        {"Origin": "http://{address}:1"},  # another port of this machine: another origin
        {"Origin": "https://{address}:{port}"},  # this host and port over TLS: another origin
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},  # e.g. a notebook on localhost:8888
        {"Origin": "http://{address}:{port}", "Sec-Fetch-Site": "cross-site"},
    ],
)
def test_capture_from_another_origin_is_refused(plain, headers):
    sent = {**JSON, **{name: value.format(address=ADDRESS, port=plain.port) for name, value in headers.items()}}
    answer = plain.request("POST", "/api/capture", body=NO_JOB, headers=sent)
    assert answer.status == 403
    assert "other" in answer.json()["error"]  # another origin, other web sites


@pytest.mark.parametrize("headers", [{"Origin": "http://{address}:{port}", "Sec-Fetch-Site": "same-origin", "Sec-Fetch-Mode": "cors"}, {}])
def test_capture_from_the_page_or_a_script_is_accepted(plain, headers):
    """The page's own POST (what Chromium sends) and a script's (no Origin): the capture
    starts, and fails on its target, not on the request."""
    sent = {**JSON, **{name: value.format(address=ADDRESS, port=plain.port) for name, value in headers.items()}}
    started = plain.request("POST", "/api/capture", body=NO_JOB, headers=sent)
    assert started.status == 202, started.body
    deadline = time.monotonic() + 60
    while (status := plain.request("GET", f"/api/capture/{started.json()['id']}").json())["state"] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    assert status["state"] == "failed"
    (result,) = status["results"]
    assert result["address"] == "127.0.0.1:1" and not result["ok"]
    assert "connection refused" in result["message"]


@pytest.mark.parametrize(("site", "status"), [("cross-site", 403), ("same-site", 403), ("same-origin", 200), ("none", 200)])
def test_the_api_answers_no_other_site(plain, site, status):
    """Reads too: a page elsewhere cannot even make the server analyse or export."""
    answer = plain.request("GET", "/api/runs", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "cors"})
    assert answer.status == status
    # The page itself opens from a link anywhere (deep links are shared).
    assert plain.request("GET", "/", headers={"Sec-Fetch-Site": site, "Sec-Fetch-Mode": "navigate"}).status == 200


def test_origin_matching_ignores_default_ports():
    def problem(host: str, origin: str) -> str | None:
        return origin_problem(Request({"type": "http", "headers": [(b"host", host.encode()), (b"origin", origin.encode())]}))

    assert problem("dash.lan", "http://dash.lan") is None
    assert problem("dash.lan:80", "http://dash.lan") is None
    assert problem("dash.lan", "https://dash.lan:443") is None  # behind a TLS proxy that keeps Host
    assert problem("Dash.lan:9001", "http://dash.LAN:9001") is None
    assert problem("dash.lan:8080", "http://dash.lan") is not None
    assert problem("dash.lan", "ftp://dash.lan") is not None
    assert problem("dash.lan:9001", "https://dash.lan:9001") is not None  # TLS on an http server's port


# ------------------------------------------------------------------ headers


def test_security_headers_on_every_answer(plain, with_token):
    answers = {
        "page": plain.request("GET", "/"),
        "json": plain.request("GET", "/api/runs"),
        "static": plain.request("GET", asset_path()),
        "404": plain.request("GET", "/api/nothing"),
        "raised 404": plain.request("GET", "/api/tools"),  # NotFound raised by the route, answered by the app's handler
        "405": plain.request("GET", "/api/capture"),
        "bad host": plain.request("GET", "/", headers={"Host": "evil.example"}),
        "no token": with_token.request("GET", "/"),
        "token": with_token.request("GET", f"/?token={with_token.token}"),
    }
    assert answers["page"].headers["content-type"].startswith("text/html")
    assert answers["static"].headers["content-type"].startswith("text/javascript")
    for what, answer in answers.items():
        for name, value in HEADERS.items():
            assert answer.headers.get(name) == value, (what, name)
    assert "frame-ancestors 'none'" in CONTENT_SECURITY_POLICY and "script-src 'self';" in CONTENT_SECURITY_POLICY


def test_the_page_has_no_inline_script():
    """script-src 'self' allows no inline script: the built page must have none."""
    index = (STATIC_DIR / "index.html").read_text()
    scripts = re.findall(r"<script\b[^>]*>", index)
    assert scripts and all(" src=" in tag for tag in scripts)
    assert not re.search(r"\son[a-z]+=", index)  # no inline event handlers either


# ------------------------------------------------------------------ the rules, and every interface


@pytest.mark.parametrize(
    ("host", "allow", "token", "hosts", "with_token"),
    [
        ("127.0.0.1", [], None, {"127.0.0.1", "localhost", "[::1]"}, False),
        ("127.0.0.2", [], None, {"127.0.0.2", "127.0.0.1", "localhost", "[::1]"}, False),
        ("::1", [], None, {"127.0.0.1", "localhost", "[::1]"}, False),
        ("localhost", ["Dash.LAN:9001"], True, {"127.0.0.1", "localhost", "[::1]", "dash.lan"}, True),
        ("0.0.0.0", [], None, None, True),
        ("::", [], None, None, True),
        ("192.168.1.5", [], None, None, True),
        ("0.0.0.0", ["box.lan"], None, {"box.lan", "127.0.0.1", "localhost", "[::1]"}, True),
        ("0.0.0.0", ["box.lan"], False, {"box.lan", "127.0.0.1", "localhost", "[::1]"}, False),
        ("192.168.1.5", ["box.lan"], False, {"box.lan", "192.168.1.5"}, False),
    ],
)
def test_access_rules(host, allow, token, hosts, with_token):
    access = Access.for_bind(host, 9001, allow, token)
    assert access.hosts == (frozenset(hosts) if hosts is not None else None)
    assert (access.token is not None) == with_token
    assert access.cookie == "stepscope-token-9001"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.5"])
def test_no_token_beyond_loopback_needs_allowed_hosts(host):
    with pytest.raises(StepscopeError, match="needs --allow-host NAME"):
        Access.for_bind(host, 9001, [], token=False)


LOOPBACK = {"127.0.0.1", "localhost", "[::1]"}


@pytest.mark.parametrize(
    ("host", "bind_all", "allow", "captures", "hosts", "captures_on"),
    [
        (None, False, [], None, LOOPBACK, True),  # tensorboard's default: localhost
        ("127.0.0.1", False, ["notebook.lan"], None, LOOPBACK | {"notebook.lan"}, True),
        ("::1", False, [], None, LOOPBACK, True),
        (None, True, [], None, None, False),  # --bind_all: TensorBoard has no access control
        (None, True, [], True, None, True),  # ... captures only with --stepscope_captures
        (None, True, ["box.lan"], None, LOOPBACK | {"box.lan"}, False),
        ("", False, [], None, None, False),  # --host "": TensorBoard binds every interface
        ("192.168.1.5", False, [], None, None, False),
        ("192.168.1.5", False, ["box.lan"], None, {"192.168.1.5", "box.lan"}, False),
    ],
)
def test_access_rules_inside_tensorboard(host, bind_all, allow, captures, hosts, captures_on):
    """TensorBoard has no token, so none is asked; Host names as for serve on loopback,
    beyond it only those named; captures off beyond loopback unless asked for."""
    access = Access.for_tensorboard(host, bind_all, allow, captures)
    assert access.hosts == (frozenset(hosts) if hosts is not None else None)
    assert access.token is None and access.embedded
    assert access.captures is captures_on


def test_inside_tensorboard_the_page_may_be_framed_and_every_other_header_holds():
    embedded, served = Access.for_tensorboard(None, False).headers, Access.for_bind("127.0.0.1", 9001).headers
    assert {name.lower(): value for name, value in served.items() if name.lower() in HEADERS} == HEADERS
    assert "X-Frame-Options" not in embedded and "frame-ancestors" not in embedded["Content-Security-Policy"]
    assert {name: value for name, value in served.items() if name != "X-Frame-Options"} == {
        **embedded,
        "Content-Security-Policy": embedded["Content-Security-Policy"] + "; frame-ancestors 'none'",
    }


def test_tokens_are_new_at_every_start():
    assert Access.for_bind("0.0.0.0", 9001).token != Access.for_bind("0.0.0.0", 9001).token


# Runs inside the namespace: for each scenario starts `stepscope serve ARGS`, sends the
# requests ({port}, {token} and {cookie}, the last cookie set, filled in) to 127.0.0.1,
# notes where the socket listens, and writes everything as JSON.
DRIVER = r"""
import http.client, json, re, subprocess, sys
from pathlib import Path

spec = json.loads(Path(sys.argv[1]).read_text())
report = []
for scenario in spec["scenarios"]:
    process = subprocess.Popen([sys.executable, "-m", "stepscope.cli", "serve", "--logdir", spec["logdir"], "--port", "0", "--cache-dir", spec["cache"], *scenario["args"]],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = process.stdout.readline().rstrip("\n")
    found = re.search(r":(\d+)/(?:\?token=([0-9a-f]+))?", line)
    if not found:
        process.wait(timeout=60)
        report.append({"line": line, "rc": process.returncode, "stderr": process.stderr.read()})
        continue
    port, token, cookie = found.group(1), found.group(2) or "", ""
    listening = [f.split()[1] for f in Path("/proc/net/tcp").read_text().splitlines()[1:] if f.split()[3] == "0A" and int(f.split()[1].split(":")[1], 16) == int(port)]
    answers = []
    for method, path, headers in scenario["requests"]:
        fill = lambda text: text.replace("{port}", port).replace("{token}", token).replace("{cookie}", cookie)
        connection = http.client.HTTPConnection("127.0.0.1", int(port), timeout=60)
        headers = {name: fill(value) for name, value in headers.items()}
        connection.putrequest(method, fill(path), skip_host="Host" in headers)
        for name, value in headers.items():
            connection.putheader(name, value)
        connection.endheaders()
        response = connection.getresponse()
        answer = {"status": response.status, "headers": {k.lower(): v for k, v in response.getheaders()}, "body": response.read().decode()}
        cookie = answer["headers"].get("set-cookie", cookie).split(";")[0]
        answers.append(answer)
        connection.close()
    process.terminate()
    process.wait(timeout=20)
    report.append({"line": line, "port": int(port), "token": token, "listening": listening, "answers": answers})
Path(sys.argv[2]).write_text(json.dumps(report))
"""


@pytest.mark.skipif(NAMESPACE_PROBLEM is not None, reason=f"binding 0.0.0.0 happens only in a private network namespace: {NAMESPACE_PROBLEM}")
def test_every_interface_needs_the_token_or_named_hosts(tmp_path):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    scenarios = [
        {
            "args": ["--host", "0.0.0.0"],
            "requests": [
                ["GET", "/api/runs", {}],
                ["GET", "/api/runs?token=0123", {}],
                ["GET", "/?token={token}", {}],
                ["GET", "/api/runs", {"Cookie": "{cookie}"}],
                # The token is the key: any Host name (this machine's, an IP, a tunnel's).
                ["GET", "/api/runs", {"Cookie": "{cookie}", "Host": "some-name.lan:{port}"}],
                # A page elsewhere (rebinding, or any site) has no cookie.
                ["GET", "/api/runs", {"Host": "evil.example:{port}"}],
            ],
        },
        {
            "args": ["--host", "0.0.0.0", "--no-token", "--allow-host", "box.lan"],
            "requests": [
                ["GET", "/api/runs", {"Host": "box.lan:{port}"}],
                ["GET", "/api/runs", {"Host": "localhost:{port}"}],
                ["GET", "/api/runs", {"Host": "evil.example:{port}"}],
            ],
        },
        {"args": ["--host", "0.0.0.0", "--no-token"], "requests": []},
    ]
    spec, out, driver = tmp_path / "spec.json", tmp_path / "report.json", tmp_path / "driver.py"
    spec.write_text(json.dumps({"logdir": str(logdir), "cache": str(tmp_path / "cache"), "scenarios": scenarios}))
    driver.write_text(DRIVER)
    command = 'ip link set lo up && exec "$0" "$@"'
    done = subprocess.run(["unshare", "-n", "sh", "-c", command, sys.executable, str(driver), str(spec), str(out)], capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    token_run, named_run, refused = json.loads(out.read_text())

    port, token = token_run["port"], token_run["token"]
    assert token_run["listening"] == [f"00000000:{port:04X}"]
    assert token_run["line"] == f"stepscope: serving {logdir} at http://{socket.gethostname()}:{port}/?token={token}{TOKEN_NOTE}"
    statuses = [answer["status"] for answer in token_run["answers"]]
    assert statuses == [403, 403, 200, 200, 200, 403]
    assert token_run["answers"][2]["headers"]["set-cookie"] == f"stepscope-token-{port}={token}; Path=/; HttpOnly; SameSite=Strict"

    port = named_run["port"]
    assert named_run["listening"] == [f"00000000:{port:04X}"]
    assert named_run["line"] == (
        f"stepscope: serving {logdir} at http://box.lan:{port}/ (no token: anyone who reaches the port can read the profiles and start captures; "
        "answering Host names 127.0.0.1, [::1], box.lan, localhost)"
    )
    assert [answer["status"] for answer in named_run["answers"]] == [200, 200, 400]

    assert refused["rc"] == 2 and refused["line"] == ""
    assert refused["stderr"].startswith("stepscope: error: --host 0.0.0.0 --no-token needs --allow-host NAME")


def test_frame_ancestors_let_the_named_pages_frame_the_dashboard():
    """``serve --frame-ancestor`` (what stepscope.notebook.show passes): CSP names the pages
    that may frame it, and X-Frame-Options, which can only deny or allow 'self', is left out."""
    assert Access.for_bind("127.0.0.1", 9001).headers["X-Frame-Options"] == "DENY"
    headers = Access.for_bind("127.0.0.1", 9001, frame_ancestors=["http://localhost:*", "vscode-webview:"]).headers
    assert "X-Frame-Options" not in headers
    policy = headers["Content-Security-Policy"]
    assert policy == CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'", "frame-ancestors 'self' http://localhost:* vscode-webview:")
    for source in ("http://a; script-src *", "'unsafe-inline'", "a b", ""):
        with pytest.raises(StepscopeError, match="--frame-ancestor"):
            Access.for_bind("127.0.0.1", 9001, frame_ancestors=[source])
