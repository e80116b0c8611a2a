"""Who the dashboard answers, and how it keeps other web pages out (docs/security.md).

Three layers, all in front of every route:

- **Host names** (DNS rebinding): a page on ``evil.example`` that re-points its name at this
  machine makes the browser send ``Host: evil.example``; only the names in
  ``Access.hosts`` are answered (400 otherwise). On loopback: the bound address, localhost,
  127.0.0.1 and [::1]. Ports are not compared, so an ``ssh -L`` tunnel on another port works.
- **Token** (anyone on the network): beyond loopback the server makes a random token, and
  answers a request only when it carries it, as ``?token=``, as ``Authorization: Bearer``,
  or as the cookie a ``?token=`` answer sets (HttpOnly, SameSite=Strict), which is how the
  page's own requests are let in. 403 otherwise.
- **Same origin**: the API refuses what the browser marks as coming from another site
  (``Sec-Fetch-Site``); a request that changes state (``state_changing``) must be a POST of
  JSON whose ``Origin``, when sent, is this server.

Every answer, refusals included, carries ``SECURITY_HEADERS`` (``EMBEDDED_HEADERS`` inside
TensorBoard, whose page frames this one: ``Access.for_tensorboard``).
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.requests import Request, cookie_parser
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from stepscope.dashboard.api.responses import JsonResponse
from stepscope.errors import StepscopeError

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
TOKEN_PARAM = "token"
# The page is self-hosted and offline: scripts and styles from the server only (the build
# has no inline script; the op profile's bars set style attributes, hence 'unsafe-inline'
# for styles only), and no framing by anyone.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",  # the token in a ?token= address never leaves in a Referer
    "Cross-Origin-Resource-Policy": "same-origin",  # no <img>/<script> of another site loads an answer
}
# Inside TensorBoard the page is a frame of TensorBoard's page, which a notebook frames in
# turn (`%tensorboard`: the notebook is on another port, another origin). frame-ancestors
# and X-Frame-Options judge every ancestor, so 'self' would blank the tab in a notebook;
# framing is left as TensorBoard leaves its own pages (it sets neither). The rest holds.
EMBEDDED_HEADERS = {
    **{name: value for name, value in SECURITY_HEADERS.items() if name != "X-Frame-Options"},
    "Content-Security-Policy": CONTENT_SECURITY_POLICY.replace("; frame-ancestors 'none'", ""),
}
# Sec-Fetch-Site values of requests another site made: the page's own are "same-origin",
# an address typed or bookmarked is "none". "same-site" is another port of the same host
# (a notebook on localhost:8888), just as foreign.
OTHER_SITES = ("cross-site", "same-site")
STATE_CHANGING_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def refusal(status: int, message: str, headers: dict[str, str] | None = None) -> JsonResponse:
    return JsonResponse({"error": message}, status_code=status, headers=headers)


def host_name(value: str) -> str:
    """The name of a Host header or address, lower case, without port or trailing dot;
    IPv6 in brackets: ``[::1]:9001`` and ``::1`` -> ``[::1]``, ``Box.lan.:80`` -> ``box.lan``."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    if value.count(":") > 1:  # a bare IPv6 address
        return f"[{value}]"
    return value.split(":", 1)[0].removesuffix(".")


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


def is_loopback(host: str) -> bool:
    address = _address(host)
    return address.is_loopback if address else host_name(host) == "localhost"


def is_wildcard(host: str) -> bool:
    """0.0.0.0, :: or "": every interface, loopback included."""
    address = _address(host)
    return host.strip("[]") == "" or bool(address and address.is_unspecified)


@dataclass(frozen=True)
class Access:
    """What a server lets in. ``hosts``: the Host names answered (None: any); ``token``:
    the secret every request must carry (None: none needed); ``cookie``: the cookie's name
    (with the port in it: cookies are per host name, not per port, and two servers on one
    machine must not overwrite each other's); ``embedded``: served inside TensorBoard's
    page (``EMBEDDED_HEADERS``); ``captures``: whether ``POST /api/capture`` may start one."""

    hosts: frozenset[str] | None
    token: str | None
    cookie: str
    embedded: bool = False
    captures: bool = True
    # CSP sources that may show the page in a frame (``serve --frame-ancestor``: a notebook's
    # origin, ``stepscope.notebook.show``); none: no page may.
    frame_ancestors: tuple[str, ...] = ()

    @classmethod
    def for_bind(cls, host: str, port: int, allow_hosts: Iterable[str] = (), token: bool | None = None, frame_ancestors: Iterable[str] = ()) -> Access:
        """The rules for a server bound to ``host``:``port``.

        - loopback: the bound address and the loopback names, plus ``allow_hosts``; no token
          unless ``token`` is True (a machine other people log in to);
        - beyond loopback: a token unless ``token`` is False; Host names are then
          unchecked unless ``allow_hosts`` names them (the token already keeps rebinding
          pages out: they have no cookie). Without a token ``allow_hosts`` is required.
        """
        named = {host_name(name) for name in allow_hosts if host_name(name)}
        bound = set() if is_wildcard(host) else {host_name(host)}
        loopback = is_loopback(host)
        if loopback or is_wildcard(host):  # both answer on loopback, where these names lead
            bound |= set(LOOPBACK_NAMES)
        with_token = (not loopback) if token is None else token
        if not loopback and not with_token and not named:
            raise StepscopeError(
                f"--host {host} --no-token needs --allow-host NAME (the name(s) browsers reach this server by), "
                "else any web page could read the profiles through DNS rebinding"
            )
        hosts = frozenset(bound | named) if loopback or named else None
        ancestors = tuple(frame_ancestors)
        for source in ancestors:
            if not source or any(character.isspace() or character in ";,'\"" for character in source):
                raise StepscopeError(f"--frame-ancestor {source!r}: give one CSP source, like http://localhost:8888")
        return cls(hosts, secrets.token_hex(24) if with_token else None, f"stepscope-token-{port}", frame_ancestors=ancestors)

    @classmethod
    def for_tensorboard(cls, host: str | None, bind_all: bool, allow_hosts: Iterable[str] = (), captures: bool | None = None) -> Access:
        """The rules inside a TensorBoard started with ``--host host`` (None: TensorBoard's
        default, localhost; "": every interface, as TensorBoard binds it) or
        ``--bind_all``. TensorBoard decides who reaches its port and has no token, so none
        is asked (its users could not get one). On loopback the
        Host names are checked as for ``serve`` (TensorBoard checks none, and a rebinding
        page must not reach captures or profiles through it); beyond loopback, only when
        ``allow_hosts`` names them. Captures make the server connect out and write into the
        logdir: on loopback they are on, beyond it off unless ``captures`` is True (anyone
        on the network could start them, with no token to stop them)."""
        bound = "::" if bind_all else ("localhost" if host is None else host)
        named = {host_name(name) for name in allow_hosts if host_name(name)}
        names = set() if is_wildcard(bound) else {host_name(bound)}
        loopback = is_loopback(bound)
        if loopback or is_wildcard(bound):
            names |= set(LOOPBACK_NAMES)
        hosts = frozenset(names | named) if loopback or named else None
        return cls(hosts, None, "", embedded=True, captures=loopback if captures is None else captures)

    @property
    def headers(self) -> dict[str, str]:
        """The headers every answer carries."""
        if self.embedded:
            return dict(EMBEDDED_HEADERS)
        if self.frame_ancestors:  # CSP's frame-ancestors names them; X-Frame-Options cannot
            policy = CONTENT_SECURITY_POLICY.replace("frame-ancestors 'none'", "frame-ancestors 'self' " + " ".join(self.frame_ancestors))
            return {**{name: value for name, value in SECURITY_HEADERS.items() if name != "X-Frame-Options"}, "Content-Security-Policy": policy}
        return dict(SECURITY_HEADERS)

    def host_problem(self, headers: Headers) -> str | None:
        if self.hosts is None:
            return None
        given = headers.get("host", "")
        if host_name(given) in self.hosts:
            return None
        allowed = ", ".join(sorted(self.hosts))
        option = "tensorboard --stepscope_allow_host NAME" if self.embedded else "--allow-host NAME"
        return f"this server does not answer to Host {given!r} (it answers to {allowed}; add a name with {option})"

    def token_given(self, headers: Headers, query: QueryParams) -> str:
        """How the request carries the token: ``"address"`` (``?token=``: the answer sets the
        cookie), ``"header"`` (Authorization or the cookie), ``"wrong"`` (a token that is
        not this one, e.g. a cookie from an earlier start) or ``"none"``."""
        assert self.token is not None
        given = query.get(TOKEN_PARAM)
        if given is not None:
            return "address" if _same(given, self.token) else "wrong"
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        cookie = cookie_parser(headers.get("cookie", "")).get(self.cookie)
        presented = [value for value in (credentials.strip() if scheme.lower() in ("bearer", "token") else None, cookie) if value is not None]
        if any(_same(value, self.token) for value in presented):
            return "header"
        return "wrong" if presented else "none"

    def set_cookie(self) -> str:
        return f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict"


def _same(given: str | None, token: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), token.encode())


class Guard:
    """ASGI middleware: Host names, then the token, then cross-site API requests; the
    security headers on every answer (and the token cookie when ``?token=`` let it in)."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        extra = self.access.headers
        refused = None
        if problem := self.access.host_problem(headers):
            refused = refusal(400, problem)
        elif self.access.token is not None:
            given = self.access.token_given(headers, QueryParams(scope.get("query_string", b"")))
            if given in ("none", "wrong"):
                why = "needs its access token" if given == "none" else "does not know this access token (a new one is made at every start)"
                refused = refusal(403, f"this server {why}: open the address with ?token= that `stepscope serve` printed")
            elif given == "address":
                extra["Set-Cookie"] = self.access.set_cookie()
        if refused is None and route_path(scope).startswith("/api/") and headers.get("sec-fetch-site") in OTHER_SITES:
            refused = refusal(403, f"the API does not answer other web sites (Sec-Fetch-Site: {headers['sec-fetch-site']})")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer = MutableHeaders(scope=message)
                for name, value in extra.items():
                    if name == "Set-Cookie":
                        answer.append(name, value)
                    elif name not in answer:
                        answer[name] = value
            await send(message)

        if refused is not None:
            await refused(scope, receive, send_with_headers)
        else:
            await self.app(scope, receive, send_with_headers)


def route_path(scope: Scope) -> str:
    """The request's path below the app's mount point: ``/api/runs`` whether the app is
    served at ``/`` (``stepscope serve``) or under TensorBoard's
    ``/data/plugin/stepscope`` (``root_path``, which ASGI's ``path`` includes)."""
    path: str = scope["path"]
    root: str = scope.get("root_path", "")
    return path[len(root) :] if root and path.startswith(root) else path


def origin_problem(request: Request) -> str | None:
    """Why a request that changes state is not from this server's own page, or None.
    ``Sec-Fetch-Site`` (sent by every current browser) must not name another site, and
    ``Origin``, when sent, must be this server: the same host and port as the Host header,
    and the request's scheme (an ``https://`` page on this ``http://`` server's host and
    port is another origin), unless a TLS proxy in front kept the Host without a port."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"refused: the request comes from another site (Sec-Fetch-Site: {site})"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    parts = urlsplit(origin)
    default = {"http": ":80", "https": ":443"}.get(parts.scheme)
    host = request.headers.get("host", "").lower()
    # An https:// page in front of an http:// server is this server only behind a TLS proxy,
    # which keeps the Host without a port; on this server's own port it is another origin.
    scheme_matches = parts.scheme == request.scope.get("scheme", "http") or (parts.scheme == "https" and ":" not in host.rpartition("]")[2])
    if default is None or not scheme_matches or parts.netloc.lower().removesuffix(default) != host.removesuffix(default):
        return f"refused: the request comes from another origin (Origin: {origin}, this server: {host})"
    return None


Endpoint = Callable[[Request], Awaitable[Response]]


def state_changing(endpoint: Endpoint) -> Endpoint:
    """Wraps a route that changes state: POST only (405), from this server's own page
    (403, ``origin_problem``), with a JSON body (415). Mount it with
    ``methods=STATE_CHANGING_METHODS`` so the other methods get this JSON 405, not
    Starlette's plain one. A cross-site form can send neither JSON nor a matching Origin."""

    async def guarded(request: Request) -> Response:
        if request.method != "POST":
            return refusal(405, f"{request.url.path} takes POST with a JSON body, not {request.method}", {"Allow": "POST"})
        if problem := origin_problem(request):
            return refusal(403, problem)
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return refusal(415, f"send the request to {request.url.path} as application/json")
        return await endpoint(request)

    guarded.__name__ = guarded.__qualname__ = endpoint.__name__
    guarded.__doc__ = endpoint.__doc__
    return guarded
