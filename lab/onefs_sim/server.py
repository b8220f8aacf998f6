"""HTTPS front end of the OneFS API simulator: sessions, CSRF, routing, fault injection, request log.

Session rules follow OneFS 8.2+: ``POST /session/1/session`` returns 201 and sets ``isisessid`` and
``isicsrf``; every other call must carry the ``isisessid`` cookie, the ``X-CSRF-Token`` header equal to
``isicsrf`` and a ``Referer`` header, else 401 (OneFS answers a request without them as unauthenticated). A
session idle for longer than ``idle_timeout`` seconds, or older than ``absolute_timeout``, is gone: 401 again.
Sessions are per node: each listener is one node (LNN), and a cookie issued by one node is unknown to another
(401), as on a cluster reached through a DNS-balanced name.

RBAC: the API user holds a privilege set (``privileges``: ISI_PRIV_* -> 'r' or 'w'; None = every privilege,
read-write, as a member of the built-in SystemAdmin role). Each call is checked against the privilege its part of
the API needs (:data:`ROUTE_PRIVILEGES`); a missing one answers 403 AEC_FORBIDDEN and changes nothing.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import re
import secrets
import ssl
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from .model import (
    ALL_PRIVILEGES,
    BUILTIN_USERS,
    PAPI_LATEST,
    ApiUser,
    Cluster,
    PapiError,
    Session,
    bad_request,
    forbidden,
    not_found,
    persona_view,
    resolve_persona,
)
from .stats import Statistics

UNAUTHORIZED = PapiError(401, "AEC_UNAUTHORIZED", "Authorization required")
MUTATING = {"POST", "PUT", "DELETE", "PATCH"}


@dataclass
class Fault:
    """Answer matching requests with ``status`` (``count`` times, or forever when count is None).

    ``after``: let that many matching requests through first (a fault that starts mid-run, e.g. between the
    first and the second export's POST). ``hang``: hold each faulted request that many seconds before answering
    (a cluster that accepts the connection and does not answer: the client's timeout must end the wait)."""

    status: int = 500
    count: int | None = 1
    method: str | None = None
    path_prefix: str | None = None
    message: str = "Injected fault (simulator)"
    code: str = "AEC_SYSTEM_INTERNAL_ERROR"
    after: int = 0
    hang: float = 0.0

    def matches(self, method: str, path: str) -> bool:
        return (self.method is None or self.method == method) and (
            self.path_prefix is None or path.startswith(self.path_prefix))

    def fires(self) -> bool:
        """Count one matching request; True when this one is faulted (False while ``after`` lets it through)."""
        if self.after > 0:
            self.after -= 1
            return False
        return True


@dataclass
class RequestRecord:
    method: str
    path: str
    query: str
    status: int
    session_user: str | None = None
    time: float = field(default_factory=time.time)

    @property
    def mutating(self) -> bool:
        return self.method in MUTATING and not self.path.startswith("/session/")


class OneFSSimulator:
    """The simulated cluster behind the HTTP handler. Thread safe (one lock)."""

    def __init__(self, backend: Any, user: str, password: str, *, state_path: str | None = None,
                 idle_timeout: float = 900, absolute_timeout: float = 14400, cluster: Cluster | None = None,
                 privileges: dict[str, str] | None = None, uid: int = 2000) -> None:
        self.backend = backend
        self.user = user
        self.api_user = ApiUser(user, 0 if user == "root" else uid, 0,
                                dict.fromkeys(ALL_PRIVILEGES, "w") if privileges is None else dict(privileges))
        self._password = password
        self.state_path = Path(state_path) if state_path else None
        self.idle_timeout = idle_timeout
        self.absolute_timeout = absolute_timeout
        self.cluster = cluster or Cluster()
        self.sessions: dict[str, Session] = {}
        self.faults: list[Fault] = []
        # GET /platform/1/statistics/*: real counters of the machine (lab/onefs_sim/stats.py); None: not served
        self.statistics: Statistics | None = None
        self.expiry_triggers: list[Fault] = []
        self.requests: list[RequestRecord] = []
        self.lock = threading.RLock()
        self._servers: list[tuple[ThreadingHTTPServer, threading.Thread]] = []
        if self.state_path and self.state_path.exists():
            data = json.loads(self.state_path.read_text())
            self.cluster = Cluster.from_json(data.get("cluster", {}))
            self.backend.load_json(data.get("backend", {}))

    # ---- test helpers ----
    def inject(self, fault: Fault) -> None:
        with self.lock:
            self.faults.append(fault)

    def clear_faults(self) -> None:
        with self.lock:
            self.faults.clear()

    def expire_sessions(self) -> None:
        """Drop every session, as a cluster does after its idle timeout or a restart."""
        with self.lock:
            self.sessions.clear()

    def expire_sessions_at(self, path_prefix: str, method: str | None = None) -> None:
        """Drop every session when the next matching request arrives (a session that expires mid-run)."""
        with self.lock:
            self.expiry_triggers.append(Fault(status=401, count=1, method=method, path_prefix=path_prefix))

    def users(self) -> dict[str, int]:
        """User name -> UID of every user the simulated providers resolve (built-ins and the API user)."""
        return {**BUILTIN_USERS, self.api_user.name: self.api_user.uid}

    def mutating_requests(self) -> list[RequestRecord]:
        with self.lock:
            return [r for r in self.requests if r.mutating]

    # ---- persistence ----
    def save(self) -> None:
        if not self.state_path:
            return
        data = {"cluster": self.cluster.to_json(), "backend": self.backend.to_json()}
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.state_path.parent, prefix=".state")
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=1, sort_keys=True)
        os.replace(tmp, self.state_path)

    def reapply(self) -> None:
        """Push the persisted exports and quotas to the backend (at start: a rebooted VM gets them back)."""
        with self.lock:
            self.backend.apply_exports(self.cluster.exports)
            for q in self.cluster.quotas.values():
                self.backend.apply_quota(q)

    # ---- sessions ----
    def login(self, body: Any, node: int = 1) -> tuple[str, Session]:
        if not isinstance(body, dict) or not isinstance(body.get("username"), str) or \
                not isinstance(body.get("password"), str):
            raise bad_request("Body must hold username, password and services")
        services = body.get("services")
        if not isinstance(services, list) or not services or any(s not in ("platform", "namespace")
                                                                 for s in services):
            raise bad_request("Field: services must list 'platform' and/or 'namespace'", "services")
        if body["username"] != self.user or not secrets.compare_digest(body["password"], self._password):
            raise PapiError(401, "AEC_UNAUTHORIZED", "Username or password is incorrect.")
        if not self.api_user.holds("ISI_PRIV_LOGIN_PAPI"):
            raise PapiError(401, "AEC_UNAUTHORIZED", "User does not have the privilege ISI_PRIV_LOGIN_PAPI.")
        token = secrets.token_hex(16)
        now = time.monotonic()
        session = Session(user=body["username"], csrf=secrets.token_hex(16), created=now, last_seen=now, node=node,
                          services=list(services))
        self.sessions[token] = session
        return token, session

    def authenticate(self, cookie_header: str | None, csrf: str | None, referer: str | None,
                     node: int = 1) -> tuple[str, Session]:
        token: str | None = None
        if cookie_header:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(cookie_header)
            except Exception:  # a malformed Cookie header is simply no session
                jar = SimpleCookie()
            if "isisessid" in jar:
                token = jar["isisessid"].value
        session = self.sessions.get(token) if token else None
        now = time.monotonic()
        if token is None or session is None or session.node != node:  # another node never saw this session
            raise UNAUTHORIZED
        if now - session.last_seen > self.idle_timeout or now - session.created > self.absolute_timeout:
            del self.sessions[token]
            raise UNAUTHORIZED
        if not csrf or not secrets.compare_digest(csrf, session.csrf) or not referer:
            raise UNAUTHORIZED
        session.last_seen = now
        return token, session

    # ---- HTTP server ----
    def _make_server(self, host: str, port: int, certfile: str, keyfile: str, node: int = 1) -> ThreadingHTTPServer:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(certfile, keyfile)
        sim = self

        class Handler(PapiHandler):
            simulator = sim
            lnn = node

        httpd = ThreadingHTTPServer((host, port), Handler)
        httpd.daemon_threads = True
        httpd.socket = ctx.wrap_socket(httpd.socket, server_side=True)
        return httpd

    def start(self, host: str, port: int, certfile: str, keyfile: str, node: int = 1) -> int:
        """Serve node ``node`` (LNN) in a background thread (tests); returns the bound port. Call once per node
        to give each node its own address, with sessions that only that node knows."""
        httpd = self._make_server(host, port, certfile, keyfile, node)
        thread = threading.Thread(target=httpd.serve_forever, name=f"onefs-sim-{node}", daemon=True)
        thread.start()
        self._servers.append((httpd, thread))
        return httpd.server_address[1]

    def serve_forever(self, host: str, port: int, certfile: str, keyfile: str) -> None:
        """Serve in this thread until SystemExit/KeyboardInterrupt (the CLI)."""
        httpd = self._make_server(host, port, certfile, keyfile)
        try:
            httpd.serve_forever()
        finally:
            httpd.server_close()

    def stop(self) -> None:
        servers, self._servers = self._servers, []
        for httpd, _ in servers:
            httpd.shutdown()
            httpd.server_close()


class PapiHandler(BaseHTTPRequestHandler):
    simulator: OneFSSimulator
    lnn: int = 1
    server_version = "Apache"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: the request log is in memory
        return

    # every verb goes through one dispatcher
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_PUT(self) -> None:
        self._dispatch("PUT")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        raw = self.rfile.read(length)
        try:
            return json.loads(raw)
        except ValueError:
            raise bad_request("Request body is not valid JSON") from None

    def _send(self, status: int, body: Any = None, cookies: list[str] | None = None) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for c in cookies or []:
            self.send_header("Set-Cookie", c)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _dispatch(self, method: str) -> None:
        sim = self.simulator
        parsed = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(parsed.path)
        query = dict(urllib.parse.parse_qsl(parsed.query, keep_blank_values=True))
        status = 500
        user = None
        recorded = False

        def record(code: int, who: str | None) -> None:
            # Before the answer is sent: a client that has its answer finds its request in sim.requests (a record
            # written after the send raced the tests that clear the list once their own change was answered).
            nonlocal recorded
            if not recorded:
                with sim.lock:
                    sim.requests.append(RequestRecord(method, path, parsed.query, code, who))
                recorded = True

        try:
            with sim.lock:
                fault = next((f for f in sim.faults if f.matches(method, path)), None)
                if fault is not None and not fault.fires():
                    fault = None
                if fault is not None and fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        sim.faults.remove(fault)
            if fault is not None:
                if fault.hang:  # outside the lock: the other requests (and the test's clear_faults) go on
                    time.sleep(fault.hang)
                raise PapiError(fault.status, fault.code, fault.message)
            with sim.lock:
                trigger = next((t for t in sim.expiry_triggers if t.matches(method, path)), None)
                if trigger is not None:
                    sim.expiry_triggers.remove(trigger)
                    sim.sessions.clear()
                body = self._body() if method in ("POST", "PUT") else None
                if path.rstrip("/") == "/session/1/session" and method == "POST":
                    token, session = sim.login(body, self.lnn)
                    status = 201
                    user = session.user
                    record(status, user)
                    self._send(201, {"services": session.services, "timeout_absolute": int(sim.absolute_timeout),
                                     "timeout_inactive": int(sim.idle_timeout), "username": session.user},
                               cookies=[f"isisessid={token}; path=/; HttpOnly; Secure",
                                        f"isicsrf={session.csrf}; path=/; Secure"])
                    return
                token, session = sim.authenticate(self.headers.get("Cookie"), self.headers.get("X-CSRF-Token"),
                                                  self.headers.get("Referer"), self.lnn)
                user = session.user
                status, result = route(sim, method, path, query, body, self.headers, token)
                record(status, user)
                self._send(status, result)
        except PapiError as err:
            status = err.status
            record(status, user)
            with contextlib.suppress(OSError):  # a client that gave up on a hung request has closed the socket
                self._send(err.status, err.body())
        except Exception as exc:  # an unexpected simulator bug must still answer like a cluster would
            status = 500
            record(status, user)
            self._send(500, {"errors": [{"code": "AEC_SYSTEM_INTERNAL_ERROR", "message": f"{type(exc).__name__}: {exc}"}]})
        finally:
            record(status, user)


_PLATFORM = re.compile(r"^/platform/(\d+)/(.+?)/?$")

# The privilege each part of the Platform API needs (resource prefix -> privilege); GET needs it read-only,
# a change needs it read-write. Resources not listed (cluster identity, config and nodes, auth/id,
# platform/latest) need only the login (ISI_PRIV_LOGIN_PAPI). From the OneFS privilege list (isi auth privileges)
# and Dell's CSI driver documentation; which privilege guards the zone list is known from prose (ISI_PRIV_AUTH).
ROUTE_PRIVILEGES: tuple[tuple[str, str], ...] = (
    ("zones", "ISI_PRIV_AUTH"),
    ("protocols/nfs", "ISI_PRIV_NFS"),
    ("quota", "ISI_PRIV_QUOTA"),
    ("network", "ISI_PRIV_NETWORK"),
    ("license", "ISI_PRIV_LICENSE"),
    ("statistics", "ISI_PRIV_STATISTICS"),
)


def check_privilege(user: ApiUser, method: str, resource: str) -> None:
    for prefix, privilege in ROUTE_PRIVILEGES:
        if resource == prefix or resource.startswith(prefix + "/"):
            write = method not in ("GET", "HEAD")
            if not user.holds(privilege, write):
                raise forbidden(privilege + (" (read-write)" if write else ""), f"{method} /{resource}")
            return


def route(sim: OneFSSimulator, method: str, path: str, query: dict[str, str], body: Any, headers: Any,
          token: str) -> tuple[int, Any]:
    c = sim.cluster
    if path.rstrip("/") == "/session/1/session":
        if method == "GET":
            s = sim.sessions[token]
            return 200, {"services": ["platform", "namespace"], "timeout_absolute": int(sim.absolute_timeout),
                         "timeout_inactive": int(sim.idle_timeout), "username": s.user}
        if method == "DELETE":
            sim.sessions.pop(token, None)
            return 204, None
    if path.rstrip("/") == "/platform/latest" and method == "GET":
        return 200, {"latest": str(PAPI_LATEST)}
    if path.startswith("/namespace/"):
        return namespace(sim, method, path, query, body, headers)
    m = _PLATFORM.match(path)
    if not m:
        raise not_found(f"Path not found: {path}")
    version, resource = int(m.group(1)), m.group(2)
    if version < 1 or version > PAPI_LATEST:
        raise not_found(f"Path not found: {path} (this cluster serves PAPI versions 1..{PAPI_LATEST})")
    check_privilege(sim.api_user, method, resource)
    parts = resource.split("/")
    zone = query.get("zone")

    def need(minimum: int) -> None:
        if version < minimum:
            raise not_found(f"Path not found: {path} (available from PAPI version {minimum})")

    if method == "GET" and resource == "cluster/config":
        return 200, c.config()
    if method == "GET" and resource == "cluster/identity":
        return 200, c.identity()
    if method == "GET" and resource == "auth/id":
        return 200, sim.api_user.auth_id()
    if method == "GET" and resource == "license/licenses":
        need(5)
        return 200, c.licence_list()
    if method == "GET" and resource == "cluster/nodes":
        need(3)
        return 200, c.node_list()
    if resource == "zones" and method == "GET":
        return 200, c.zone_list()
    if parts[0] == "zones" and len(parts) == 2 and method == "GET":
        c.zone(parts[1])
        return 200, {"zones": [c.zone_view(parts[1])]}
    if parts[:3] == ["protocols", "nfs", "exports"]:
        if len(parts) == 3:
            if method == "GET":
                return 200, c.list_exports(zone, query.get("path"))
            if method == "POST":
                with _exports_rollback(sim):
                    _check_export_personas(sim, body)
                    eid = c.create_export(body, zone, sim.backend.path_exists)
                    _apply_exports(sim)
                return 201, {"id": eid}
        elif len(parts) == 4:
            try:
                eid = int(parts[3])
            except ValueError:
                raise not_found(f"Export '{parts[3]}' not found: export ids are numeric") from None
            if method == "GET":
                return 200, c.get_export(eid, zone)
            if method == "PUT":
                with _exports_rollback(sim):
                    _check_export_personas(sim, body)
                    c.update_export(eid, body, zone, sim.backend.path_exists)
                    _apply_exports(sim)
                return 204, None
            if method == "DELETE":
                with _exports_rollback(sim):
                    c.delete_export(eid, zone)
                    _apply_exports(sim)
                return 204, None
    if parts[:2] == ["quota", "quotas"]:
        if len(parts) == 2:
            if method == "GET":
                wanted = query.get("path")
                items = [c.quota_view(qid, sim.backend.quota_usage(q)) for qid, q in sorted(c.quotas.items())
                         if wanted is None or q["path"] == wanted.rstrip("/")]
                return 200, {"quotas": items, "resume": None, "total": len(items)}
            if method == "POST":
                qid = c.create_quota(body, sim.backend.path_exists)
                try:
                    sim.backend.apply_quota(c.quotas[qid])
                except PapiError:
                    c.quotas.pop(qid, None)
                    raise
                sim.save()
                return 201, {"id": qid}
        elif len(parts) == 3:
            qid = parts[2]
            if qid not in c.quotas:
                raise not_found(f"Quota {qid} not found")
            if method == "GET":
                return 200, {"quotas": [c.quota_view(qid, sim.backend.quota_usage(c.quotas[qid]))]}
            if method == "PUT":
                c.update_quota(qid, body)
                sim.backend.apply_quota(c.quotas[qid])
                sim.save()
                return 204, None
            if method == "DELETE":
                q = c.delete_quota(qid)
                sim.backend.remove_quota(q)
                sim.save()
                return 204, None
    if parts[0] == "statistics" and method == "GET" and resource in ("statistics/current", "statistics/keys"):
        if sim.statistics is None:
            raise not_found(f"Path not found: {path} (this simulator's backend has no counters to serve)")
        return 200, sim.statistics.current(query) if parts[1] == "current" else sim.statistics.keys()
    if parts[0] == "network":
        need(3)
        if resource == "network/pools" and method == "GET":
            return 200, c.pool_list()
        if resource == "network/interfaces" and method == "GET":
            ifaces = sim.backend.interfaces()
            return 200, {"interfaces": [_iface_view(i, c) for i in ifaces], "resume": None, "total": len(ifaces)}
        if len(parts) >= 5 and parts[1] == "groupnets" and parts[3] == "subnets":
            groupnet, subnet = parts[2], parts[4]
            if len(parts) == 5 and method == "GET":
                return 200, {"subnets": [c.subnet(groupnet, subnet)]}
            if len(parts) == 6 and parts[5] == "pools":
                if method == "GET":
                    c.subnet(groupnet, subnet)
                    pools = [p for p in c.pool_list()["pools"] if p["groupnet"] == groupnet and p["subnet"] == subnet]
                    return 200, {"pools": pools, "resume": None, "total": len(pools)}
                if method == "POST":
                    pid = c.create_pool(groupnet, subnet, body)
                    sim.save()
                    return 201, {"id": pid}
            if len(parts) == 7 and parts[5] == "pools":
                if method == "GET":
                    return 200, c.get_pool(groupnet, subnet, parts[6])
                if method == "PUT":
                    c.update_pool(groupnet, subnet, parts[6], body)
                    sim.save()
                    return 204, None
    raise not_found(f"Path not found: {method} {path}")


def _iface_view(iface: dict[str, Any], c: Cluster) -> dict[str, Any]:
    owners = []
    for p in c.pools.values():
        if any(i.get("iface") == iface["name"] and i.get("lnn") == iface["lnn"] for i in p.get("ifaces", [])):
            owners.append({"groupnet": p["groupnet"], "subnet": p["subnet"], "pool": p["name"],
                           "ip_addrs": iface["ip_addrs"], "type": "static"})
    return {"id": f"{iface['lnn']}:{iface['name']}", "lnn": iface["lnn"], "name": iface["name"],
            "ip_addrs": iface["ip_addrs"], "status": iface["status"], "mtu": iface.get("mtu"),
            "owners": owners, "type": "ethernet", "nic_name": iface["name"], "flags": [], "vlans": []}


@contextlib.contextmanager
def _exports_rollback(sim: OneFSSimulator) -> Iterator[None]:
    """Keep the API and the kernel's export table in step: a failed exportfs undoes the change."""
    saved = copy.deepcopy(sim.cluster.exports)
    saved_next = sim.cluster.next_export_id
    try:
        yield
    except PapiError:
        sim.cluster.exports = saved
        sim.cluster.next_export_id = saved_next
        with contextlib.suppress(PapiError):  # put the previous table back; the original error is what counts
            sim.backend.apply_exports(saved)
        raise


def _apply_exports(sim: OneFSSimulator) -> None:
    sim.backend.apply_exports(sim.cluster.exports)
    sim.save()


def _check_export_personas(sim: OneFSSimulator, body: Any) -> None:
    """The users and groups of an export's root/non-root/failure/all mappings must resolve (400 otherwise)."""
    if not isinstance(body, dict):
        return
    users = sim.users()
    for name in ("map_root", "map_non_root", "map_failure", "map_all"):
        mapping = body.get(name)
        if not isinstance(mapping, dict):
            continue
        if mapping.get("user"):
            resolve_persona(mapping["user"], "user", users)
        for group in [mapping.get("primary_group"), *(mapping.get("secondary_groups") or [])]:
            if group:
                resolve_persona(group, "group", users)


def _may_write(user: ApiUser, info: dict[str, Any]) -> bool:
    """POSIX write permission of ``user`` on a directory (owner bits, then group, then other)."""
    mode = int(info["mode"], 8)
    if info["uid"] == user.uid:
        return bool(mode & 0o200)
    if info["gid"] == user.gid:
        return bool(mode & 0o020)
    return bool(mode & 0o002)


def namespace(sim: OneFSSimulator, method: str, path: str, query: dict[str, str], body: Any,
              headers: Any) -> tuple[int, Any]:
    """RESTful Access to Namespace (RAN), access point 'ifs' only: directories and their owner, group and mode.

    As on OneFS: a non-root user needs ISI_PRIV_NS_IFS_ACCESS and ISI_PRIV_NS_TRAVERSE for any namespace call; a
    directory it creates belongs to it (its UID and primary GID) and needs write permission on the parent (or
    ISI_PRIV_IFS_RESTORE); giving a directory another owner or group, or changing the mode of a directory it
    does not own, needs root or ISI_PRIV_IFS_RESTORE. Personas are resolved by name or by UID:/GID: id; a name
    no provider knows is refused (400).
    """
    user = sim.api_user
    for privilege in ("ISI_PRIV_NS_IFS_ACCESS", "ISI_PRIV_NS_TRAVERSE"):
        if not user.holds(privilege):
            raise forbidden(privilege, f"{method} {path} (RESTful Access to Namespace)")
    fs_path = path[len("/namespace"):].rstrip("/") or "/"
    if not (fs_path == "/ifs" or fs_path.startswith("/ifs/")):
        raise not_found(f"Access point not found for {path}")
    if ".." in fs_path.split("/"):
        raise bad_request("'..' is not allowed in a namespace path")
    backend = sim.backend
    users = sim.users()
    restore = user.holds("ISI_PRIV_IFS_RESTORE")
    if "acl" in query:
        info = backend.dir_info(fs_path)
        if info is None:
            raise not_found(f"Path '{fs_path}' not found")
        if method == "GET":
            return 200, {"acl": [], "authoritative": "mode", "group": persona_view(info["gid"], "group", users),
                         "mode": info["mode"], "owner": persona_view(info["uid"], "user", users)}
        if method == "PUT":
            if not isinstance(body, dict):
                raise bad_request("ACL body must be a JSON object")
            mode = body.get("mode")
            if mode is not None and not re.fullmatch(r"0?[0-7]{3,4}", str(mode)):
                raise bad_request(f"Field: mode: invalid mode {mode!r}", "mode")
            uid = resolve_persona(body["owner"], "user", users)[0] if body.get("owner") else None
            gid = resolve_persona(body["group"], "group", users)[0] if body.get("group") else None
            if not restore and ((uid is not None and uid != info["uid"]) or (gid is not None and gid != info["gid"]
                                                                             and gid != user.gid)):
                raise forbidden("ISI_PRIV_IFS_RESTORE", f"changing the owner or group of {fs_path} (owner "
                                f"{persona_view(info['uid'], 'user', users)['name']}) to another identity")
            if not restore and mode is not None and info["uid"] != user.uid:
                raise forbidden("ISI_PRIV_IFS_RESTORE", f"changing the mode of {fs_path}, which {user.name} "
                                "does not own")
            backend.set_acl(fs_path, uid, gid, f"{int(str(mode), 8):04o}" if mode else None)
            sim.save()
            return 200, None
    if method in ("GET", "HEAD"):
        info = backend.dir_info(fs_path)
        if info is None:
            raise not_found(f"Path '{fs_path}' not found")
        if "metadata" in query:
            return 200, {"attrs": [{"name": "type", "namespace": None, "value": "container"},
                                   {"name": "mode", "namespace": None, "value": info["mode"]},
                                   {"name": "owner", "namespace": None,
                                    "value": persona_view(info["uid"], "user", users)["name"]},
                                   {"name": "group", "namespace": None,
                                    "value": persona_view(info["gid"], "group", users)["name"]}]}
        return 200, {"children": []}
    if method == "PUT":
        if (headers.get("x-isi-ifs-target-type") or "").lower() != "container":
            raise bad_request("the simulator creates directories only (x-isi-ifs-target-type: container)")
        mode = headers.get("x-isi-ifs-access-control") or "0700"
        if not re.fullmatch(r"0?[0-7]{3,4}", mode):
            raise bad_request(f"x-isi-ifs-access-control: {mode!r} is not an octal mode")
        recursive = query.get("recursive", "").lower() == "true"
        if backend.dir_info(fs_path) is None and not restore:
            parent = fs_path.rsplit("/", 1)[0]
            while backend.dir_info(parent) is None and parent != "/ifs":
                parent = parent.rsplit("/", 1)[0]
            pinfo = backend.dir_info(parent)
            if pinfo is not None and not _may_write(user, pinfo):
                raise PapiError(403, "AEC_FORBIDDEN", f"Permission denied: {user.name} may not write to {parent} "
                                                      f"(mode {pinfo['mode']})")
        backend.make_dir(fs_path, f"{int(mode, 8):04o}", recursive, user.uid, user.gid)
        sim.save()
        return 200, None
    raise not_found(f"{method} not supported on {path}")
