# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""OneFS Platform API (PAPI) client shared by the powerscale_* modules.

Standard library and Ansible's own HTTP client (module_utils.urls) only, so it runs wherever Ansible runs a
module. What it does, following the public PAPI documentation and Dell's own clients:

* session login: ``POST /session/1/session`` with ``{"username", "password", "services": ["platform",
  "namespace"]}``; the cluster answers 201 and sets the cookies ``isisessid`` and ``isicsrf``. Every later
  call carries the ``isisessid`` cookie, the ``X-CSRF-Token`` header (the ``isicsrf`` value) and a
  ``Referer`` of the cluster's own URL, as OneFS 8.2+ requires.
* a 401 on a call means the session expired (idle or absolute timeout) or was dropped by the cluster:
  log in again once and repeat the call.
* TLS is verified by default, against the system store or a CA bundle (``ca_path``). Turning verification
  off must be explicit (``validate_certs=False``).
* bounded retries with exponential backoff on HTTP 5xx and on connection errors, never on 4xx (a 4xx
  is an answer: repeating it gives the same answer) and never on a failed certificate check.
* PAPI error bodies ``{"errors": [{"code": "AEC_...", "message": "..."}]}`` become :class:`OneFSError`
  whose text names the method, the path, the HTTP status, the code and the message - also when such a body
  comes with a 2xx status. An answer that is not the JSON the call expects (cut, doubled, an HTML page, a key
  twice, a collection without its list) is an error naming what was expected, never read as "nothing there".
* API version discovery: ``GET /platform/latest`` gives the highest PAPI version the cluster serves.

The password is held only in the :class:`OneFSConnection` (``repr=False``) and in the login request body;
it is never part of an exception, a message or a log entry.
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.strict_json import kind, loads
from ansible.module_utils.urls import Request

SESSION_PATH = "/session/1/session"
SESSION_SERVICES = ["platform", "namespace"]
MUTATING_METHODS = frozenset({"POST", "PUT", "DELETE", "PATCH"})

# Connection options every powerscale_* module accepts (merged into its argument_spec). Their documentation
# is the doc fragment plugins/doc_fragments/onefs_api.py; tests/powerscale/test_module_docs.py checks the two agree.
ONEFS_ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "api_host": {"type": "str", "required": True},
    "api_port": {"type": "int", "default": 8080},
    "api_user": {"type": "str", "required": True},
    "api_password": {"type": "str", "required": True, "no_log": True},
    "validate_certs": {"type": "bool", "default": True},
    "ca_path": {"type": "path"},
    "timeout": {"type": "int", "default": 30, "aliases": ["api_timeout"]},
    "api_retries": {"type": "int", "default": 4},
    "api_retry_backoff": {"type": "float", "default": 1.0},
}


# What to do, appended to each failure the cluster (not the inventory) caused. The storage stage is idempotent:
# a re-run reads the cluster and sends only what is still missing.
SERVER_ERROR_FIX = ("The cluster kept answering with a server error: check its health (`isi status` on a node) "
                    "and the API service of that node, then run the storage stage again")
HUNG_FIX = ("Check the API service of that node (`isi status`, the node's load), raise powerscale_api_timeout_s "
            "only if the cluster is known to be slow, then run the storage stage again: it reads the cluster first "
            "and sends only what is still missing")
UNREACHABLE_FIX = ("Check that powerscale_api_host and powerscale_api_port reach a node's management address and "
                   "that the API service runs there, then run the storage stage again")


class OneFSError(Exception):
    """A failed Platform API call, with a message fit for an operator (never any credential)."""

    def __init__(self, message: str, *, status: int | None = None, code: str | None = None,
                 method: str | None = None, path: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.method = method
        self.path = path


class OneFSAuthError(OneFSError):
    """Login refused: wrong user or password, or the user lacks ISI_PRIV_LOGIN_PAPI."""


class OneFSTLSError(OneFSError):
    """The cluster's certificate could not be verified."""


@dataclass(frozen=True)
class OneFSConnection:
    host: str
    user: str
    password: str = field(repr=False)
    port: int = 8080
    validate_certs: bool = True
    ca_path: str | None = None
    timeout: float = 30
    retries: int = 4
    retry_backoff: float = 1.0

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"https://{host}:{self.port}"

    @classmethod
    def from_module_params(cls, params: dict[str, Any]) -> OneFSConnection:
        return cls(
            host=params["api_host"],
            port=params["api_port"],
            user=params["api_user"],
            password=params["api_password"],
            validate_certs=params["validate_certs"],
            ca_path=params.get("ca_path") or None,
            timeout=params["timeout"],
            retries=max(0, params["api_retries"]),
            retry_backoff=max(0.0, params["api_retry_backoff"]),
        )


def papi_error_text(body: bytes | str | None) -> tuple[str | None, str]:
    """Return (first error code, all messages joined) from a PAPI error body, tolerating non-JSON bodies."""
    if body is None:
        return None, ""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return None, text.strip()[:300]
    errors = data.get("errors") if isinstance(data, dict) else None
    if not isinstance(errors, list) or not errors:
        return None, text.strip()[:300]
    code = None
    parts = []
    for err in errors:
        if not isinstance(err, dict):
            continue
        code = code or err.get("code")
        msg = str(err.get("message", "")).strip()
        if err.get("field"):
            msg = f"{msg} (field {err['field']})"
        parts.append(f"{err.get('code', '?')}: {msg}")
    return code, "; ".join(parts)


def parse_set_cookies(headers: list[str]) -> dict[str, str]:
    """Cookie name -> value from Set-Cookie header values."""
    cookies: dict[str, str] = {}
    for header in headers:
        first = header.split(";", 1)[0]
        if "=" in first:
            name, value = first.split("=", 1)
            cookies[name.strip()] = value.strip()
    return cookies


def backoff_delays(retries: int, first: float, cap: float = 30.0) -> list[float]:
    """Pauses before each retry: first, 2*first, 4*first, ... capped."""
    return [min(cap, first * (2**i)) for i in range(retries)]


def worst_case_seconds(conn: OneFSConnection) -> float:
    """The longest one logical request can take before it fails: every attempt waits ``timeout`` (a hung
    cluster), plus the pauses between them. With the defaults (30 s, 4 retries, 1 s first pause): 165 s."""
    return (conn.retries + 1) * conn.timeout + sum(backoff_delays(conn.retries, conn.retry_backoff))


class OneFSClient:
    """A session-authenticated Platform API client.

    ``opener`` and ``sleep`` are injectable for tests. ``calls`` records (method, path, status) of every
    HTTP exchange, for the module's debug output; it never holds bodies or headers.
    """

    def __init__(self, conn: OneFSConnection, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.conn = conn
        self._sleep = sleep
        self._session_id: str | None = None
        self._csrf: str | None = None
        self._api_version: int | None = None
        self.calls: list[tuple[str, str, int | None]] = []
        self._ssl = self._ssl_context()

    # ---- TLS -------------------------------------------------------------------------------------
    def _ssl_context(self) -> ssl.SSLContext:
        if not self.conn.validate_certs:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            return ctx
        try:
            return ssl.create_default_context(cafile=self.conn.ca_path or None)
        except (OSError, ssl.SSLError) as exc:
            raise OneFSTLSError(
                f"cannot load the CA bundle ca_path={self.conn.ca_path!r}: {exc}. "
                "Give a readable PEM file that holds the CA which signed the cluster's certificate."
            ) from None

    # ---- low level -------------------------------------------------------------------------------
    def _url(self, path: str, query: dict[str, Any] | None) -> str:
        url = self.conn.base_url + urllib.parse.quote(path, safe="/:@-._~!$&'()*+,;=")
        if query:
            parts = []
            for key, value in query.items():
                if value is None:
                    continue
                if value is True or value == "":
                    parts.append(urllib.parse.quote(key))
                else:
                    parts.append(f"{urllib.parse.quote(key)}={urllib.parse.quote(str(value), safe='')}")
            if parts:
                url += "?" + "&".join(parts)
        return url

    def _send_once(self, method: str, path: str, query: dict[str, Any] | None, body: bytes | None,
                   headers: dict[str, str]) -> tuple[int, bytes, Any]:
        # Ansible's HTTP client with this client's own TLS context (verification, ca_path) and nothing added:
        # no ~/.netrc credentials, no gzip negotiation, redirects as urllib follows them
        try:
            with Request().open(method, self._url(path, query), data=body, headers=dict(headers),
                                timeout=self.conn.timeout, context=self._ssl, use_netrc=False,
                                decompress=False, follow_redirects="urllib2") as resp:
                return resp.status, resp.read(), resp.headers
        except urllib.error.HTTPError as exc:
            data = exc.read() if exc.fp is not None else b""
            return exc.code, data, exc.headers

    def _send(self, method: str, path: str, query: dict[str, Any] | None, body: bytes | None,
              headers: dict[str, str]) -> tuple[int, bytes, Any]:
        """One logical request with bounded retries on 5xx and connection errors.

        A request that was sent and got no answer within ``timeout`` (the cluster hangs) is repeated only when
        repeating it is harmless: never a POST, which the cluster may have carried out (a second POST of an
        export would create a second export of the same path)."""
        delays = backoff_delays(self.conn.retries, self.conn.retry_backoff)
        attempt = 0
        where = f"OneFS API {method} {path} on {self.conn.base_url}"
        while True:
            attempt += 1
            try:
                status, data, resp_headers = self._send_once(method, path, query, body, headers)
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                if isinstance(reason, ssl.SSLCertVerificationError) or isinstance(exc, ssl.SSLCertVerificationError):
                    raise OneFSTLSError(
                        f"TLS certificate of {self.conn.base_url} could not be verified ({_short(reason)}). "
                        "Set ca_path (powerscale_ca_path) to the CA bundle that signs it; turn "
                        "validate_certs (powerscale_validate_certs) off only deliberately.",
                        method=method, path=path,
                    ) from None
                self.calls.append((method, path, None))
                # urllib wraps what fails before the request is sent (connect, TLS handshake) in URLError; a
                # bare timeout comes from waiting for the answer to a request the cluster received.
                unanswered = isinstance(exc, TimeoutError) and not isinstance(exc, urllib.error.URLError)
                if unanswered and (method == "POST" or attempt > len(delays)):
                    raise OneFSError(
                        f"{where}: no answer within timeout={self.conn.timeout:g}s (powerscale_api_timeout_s), "
                        f"{attempt} attempt(s): the cluster took the request and did not answer"
                        + (" (a POST is not repeated: the cluster may have carried it out)" if method == "POST"
                           else f" (api_retries={self.conn.retries})")
                        + f". {HUNG_FIX}", method=method, path=path,
                    ) from None
                if attempt > len(delays):
                    raise OneFSError(
                        f"{where}: connection failed after {attempt} attempt(s): {_short(reason)}. "
                        f"{UNREACHABLE_FIX}", method=method, path=path,
                    ) from None
                self._sleep(delays[attempt - 1])
                continue
            self.calls.append((method, path, status))
            if status >= 500 and attempt <= len(delays):
                self._sleep(delays[attempt - 1])
                continue
            if status >= 500:
                code, text = papi_error_text(data)
                raise OneFSError(
                    f"{where} failed with HTTP {status} after {attempt} attempt(s) "
                    f"(api_retries={self.conn.retries}): {text or 'no error body'}. {SERVER_ERROR_FIX}",
                    status=status, code=code, method=method, path=path,
                )
            return status, data, resp_headers

    # ---- session ---------------------------------------------------------------------------------
    def login(self) -> None:
        body = json.dumps(
            {"username": self.conn.user, "password": self.conn.password, "services": SESSION_SERVICES}
        ).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "Referer": self.conn.base_url}
        status, data, resp_headers = self._send("POST", SESSION_PATH, None, body, headers)
        if status in (401, 403):
            _code, text = papi_error_text(data)
            raise OneFSAuthError(
                f"OneFS refused the login of user {self.conn.user!r} at {self.conn.base_url} (HTTP {status}"
                f"{': ' + text if text else ''}). Check powerscale_api_user and powerscale_api_password, "
                "and that the user holds ISI_PRIV_LOGIN_PAPI.",
                status=status, method="POST", path=SESSION_PATH,
            )
        if status not in (200, 201):
            code, text = papi_error_text(data)
            raise OneFSError(f"OneFS login at {self.conn.base_url} failed with HTTP {status}: {text}",
                             status=status, code=code, method="POST", path=SESSION_PATH)
        cookies = parse_set_cookies(resp_headers.get_all("Set-Cookie") or [])
        if "isisessid" not in cookies:
            raise OneFSError(f"OneFS login at {self.conn.base_url} answered {status} without an isisessid "
                             "cookie: is this a OneFS Platform API endpoint?", status=status,
                             method="POST", path=SESSION_PATH)
        self._session_id = cookies["isisessid"]
        self._csrf = cookies.get("isicsrf")

    def logout(self) -> None:
        """End the session (best effort: a cluster that already dropped it is fine)."""
        if not self._session_id:
            return
        try:
            self._send("DELETE", SESSION_PATH, None, None, self._auth_headers())
        except OneFSError:
            pass
        finally:
            self._session_id = None
            self._csrf = None

    def _auth_headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "Referer": self.conn.base_url,
                   "Cookie": f"isisessid={self._session_id}"}
        if self._csrf:
            headers["X-CSRF-Token"] = self._csrf
        return headers

    # ---- public calls ----------------------------------------------------------------------------
    def request(self, method: str, path: str, *, query: dict[str, Any] | None = None, body: Any = None,
                headers: dict[str, str] | None = None, ok_missing: bool = False) -> Any:
        """Call the API and return the decoded JSON body (None for an empty body).

        ``ok_missing``: a 404 returns None instead of raising.
        """
        method = method.upper()
        payload = json.dumps(body).encode() if body is not None else None
        if payload is None and method in ("PUT", "POST"):
            payload = b""  # an explicit Content-Length: 0 (namespace PUTs carry their data in headers)
        relogged = False
        if not self._session_id:
            self.login()
            relogged = True
        while True:
            all_headers = self._auth_headers()
            if body is not None:
                all_headers["Content-Type"] = "application/json"
            all_headers.update(headers or {})
            status, data, _unused = self._send(method, path, query, payload, all_headers)
            if status == 401 and not relogged:
                # Session expired or was dropped: log in again, once, and repeat the call.
                self.login()
                relogged = True
                continue
            break
        if 200 <= status < 300:
            if not data:
                return None
            try:
                decoded = loads(data)
            except ValueError as exc:
                raise OneFSError(f"OneFS API {method} {path}: answer is not JSON ({exc}): {data[:200]!r}",
                                 status=status, method=method, path=path) from None
            if isinstance(decoded, dict) and isinstance(decoded.get("errors"), list) and decoded["errors"]:
                code, text = papi_error_text(data)
                raise OneFSError(f"OneFS API {method} {path} answered HTTP {status} with an error body: {text}",
                                 status=status, code=code, method=method, path=path)
            return decoded
        if status == 404 and ok_missing:
            return None
        code, text = papi_error_text(data)
        shown = path + ("?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
                        if query else "")
        raise OneFSError(f"OneFS API {method} {shown} failed with HTTP {status}: {text or 'no error body'}",
                         status=status, code=code, method=method, path=path)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, body: Any, **kw: Any) -> Any:
        return self.request("POST", path, body=body, **kw)

    def put(self, path: str, body: Any = None, **kw: Any) -> Any:
        return self.request("PUT", path, body=body, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def get_all(self, path: str, key: str, query: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Follow PAPI ``resume`` tokens and return every item of a collection.

        Each page must be ``{"<key>": [{...}, ...], "resume": null|"token"}``: anything else (no body, no list,
        items that are not objects) is an OneFSError, never an empty collection."""
        items: list[dict[str, Any]] = []
        q = dict(query or {})
        while True:
            data = self.get(path, query=q)
            items.extend(collection_items(data, key, f"GET {path}"))
            resume = data.get("resume")
            if resume is not None and not isinstance(resume, str):
                raise OneFSError(f"OneFS API GET {path}: 'resume' is {kind(resume)} ({resume!r}), expected a "
                                 "token string or null", method="GET", path=path)
            if not resume:
                return items
            q = {"resume": resume}

    # ---- versions --------------------------------------------------------------------------------
    def api_version(self) -> int:
        """Highest PAPI version served by the cluster (``GET /platform/latest``)."""
        if self._api_version is None:
            data = self.get("/platform/latest")
            if not isinstance(data, dict):
                raise OneFSError(f"GET /platform/latest answered {kind(data)} ({str(data)[:120]!r}), expected "
                                 '{"latest": "<version>"}', method="GET", path="/platform/latest")
            latest = str(data.get("latest", ""))
            try:
                self._api_version = int(latest.split(".", maxsplit=1)[0])
            except ValueError:
                raise OneFSError(f"GET /platform/latest gave no usable version: {data!r}") from None
        return self._api_version

    def platform(self, wanted: int, resource: str, minimum: int = 1) -> str:
        """``/platform/<v>/<resource>`` with v = min(wanted, cluster latest), refusing clusters below minimum."""
        latest = self.api_version()
        if latest < minimum:
            raise OneFSError(f"the cluster serves PAPI up to version {latest}; /{resource} needs {minimum} "
                             "or later (upgrade OneFS)")
        return f"/platform/{min(wanted, latest)}/{resource.lstrip('/')}"


def collection_items(data: Any, key: str, what: str) -> list[dict[str, Any]]:
    """The items of one PAPI collection page ``{"<key>": [{...}, ...]}``; OneFSError for any other answer."""
    expected = f'{{"{key}": [...]}}'
    if not isinstance(data, dict):
        got = "no body (or JSON null)" if data is None else f"{kind(data)} ({str(data)[:120]!r})"
        raise OneFSError(f"OneFS API {what} answered {got}, expected a JSON object {expected}")
    items = data.get(key)
    if not isinstance(items, list):
        got = f"no '{key}' (keys {sorted(data)[:8]})" if key not in data else f"'{key}' as {kind(items)}"
        raise OneFSError(f"OneFS API {what} answered {got}, expected {expected}")
    wrong = [i for i, item in enumerate(items) if not isinstance(item, dict)]
    if wrong:
        raise OneFSError(f"OneFS API {what}: item {wrong[0]} of '{key}' is {kind(items[wrong[0]])} "
                         f"({str(items[wrong[0]])[:80]!r}), expected a JSON object")
    return items


def _short(reason: Any) -> str:
    text = str(reason)
    return text if len(text) < 300 else text[:300] + "..."


# ---- helpers shared by the modules -------------------------------------------------------------------

def persona_name(value: Any) -> str | None:
    """'USER:nobody' / {'id': 'USER:nobody'} / {'name': 'nobody', 'id': 'UID:65534'} / 'nobody' -> 'nobody'."""
    if value is None:
        return None
    if isinstance(value, dict):
        # OneFS answers {"id": "UID:0", "name": "root", "type": "user"}: the name is what an inventory gives
        if value.get("name"):
            return str(value["name"])
        return persona_name(value.get("id"))
    text = str(value)
    prefix, sep, rest = text.partition(":")
    if sep and prefix.upper() in ("USER", "GROUP"):
        return rest
    return text


def namespace_path(ifs_path: str) -> str:
    """/ifs/data/x -> /namespace/ifs/data/x (the default 'ifs' access point of the RESTful Access to Namespace)."""
    if not ifs_path.startswith("/ifs"):
        raise OneFSError(f"path {ifs_path!r} is not under /ifs")
    return "/namespace" + ifs_path.rstrip("/")


def module_client(module: Any) -> OneFSClient:
    """Build a client from an AnsibleModule's parameters."""
    return OneFSClient(OneFSConnection.from_module_params(module.params))


def run_onefs_module(module: Any, work: Callable[[OneFSClient], dict[str, Any]]) -> None:
    """Run ``work(client)`` and exit the module: its result dict on success, a clear failure otherwise.

    The session is always logged out. Only OneFSError messages (which never hold credentials) reach the
    operator; ``api_calls`` lists method, path and status of each HTTP exchange for -vvv debugging.
    """
    try:
        client = module_client(module)
    except OneFSError as exc:
        module.fail_json(msg=exc.message)
        return
    try:
        result = work(client)
    except OneFSError as exc:
        client.logout()
        done = changes_made(client.calls)
        module.fail_json(msg=f"{sentence(exc.message)} {changes_text(done)}.", status=exc.status, code=exc.code,
                         changed=bool(done), changes_made=done, api_calls=[list(c) for c in client.calls])
        return
    client.logout()
    result.setdefault("api_calls", [list(c) for c in client.calls])
    module.exit_json(**result)


def sentence(text: str) -> str:
    """``text`` closed with a full stop (unless it ends with one already)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def changes_made(calls: list[tuple[str, str, int | None]]) -> list[str]:
    """The changing calls the cluster accepted (2xx), as "METHOD path", in order: what a failed task had already
    done. The session login and logout are not changes."""
    return [f"{method} {path}" for method, path, status in calls
            if method in MUTATING_METHODS and not path.startswith(SESSION_PATH) and status is not None
            and 200 <= status < 300]


def changes_text(done: list[str]) -> str:
    """The sentence a failure ends with: nothing changed, or which changes were made before it."""
    if not done:
        return "This task changed nothing on the cluster"
    return (f"Before the failure this task had already changed the cluster ({'; '.join(done)}); the next run "
            "reads it back and completes what is missing")


def sorted_unique(values: Any) -> list[str]:
    """Order-insensitive form of a client/flavor list (a list the cluster answered as anything else: OneFSError)."""
    if values is not None and not isinstance(values, (list, tuple)):
        raise OneFSError(f"expected a list of names or addresses, the cluster answered {kind(values)} {values!r}")
    return sorted({str(v).strip() for v in values or []})
