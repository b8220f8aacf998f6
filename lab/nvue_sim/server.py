"""HTTPS front end of the NVUE simulator: basic auth, /nvue_v1 routes, problem+json errors."""

from __future__ import annotations

import base64
import hmac
import json
import ssl
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .model import ApiError, Switch

PREFIX = "/nvue_v1"


def make_handler(switch: Switch, user: str, password: str) -> type[BaseHTTPRequestHandler]:
    expected = base64.b64encode(f"{user}:{password}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        server_version = "nginx"
        sys_version = ""
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet; the state file has the audit trail
            return

        def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(body, indent=2).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/problem+json" if status >= 400 else "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw.strip():
                return None
            try:
                return json.loads(raw)
            except ValueError as exc:
                raise ApiError(400, f"Failed to decode JSON object: {exc}") from exc

        def _authorized(self) -> bool:
            header = self.headers.get("Authorization", "")
            return header.startswith("Basic ") and hmac.compare_digest(header[6:].strip(), expected)

        def _route(self, method: str) -> None:
            try:
                if not self._authorized():
                    self._send(401, ApiError(401, "The server could not verify that you are authorized to access "
                                                  "the URL requested.").body(),
                               {"WWW-Authenticate": 'Basic realm="nvue"'})
                    return
                if switch.profile.password_gate and switch.default_password:
                    # 5.6+: "you must change the password for the cumulus user; otherwise you see 403 responses".
                    # The body's wording is not from a capture (the guides show only the status).
                    raise ApiError(403, "The cumulus user's default password has not been changed; NVUE refuses API "
                                        "requests until it is")
                url = urllib.parse.urlsplit(self.path)
                if not url.path.startswith(PREFIX):
                    raise ApiError(404, f"The requested URL was not found on the server: {url.path}")
                query = dict(urllib.parse.parse_qsl(url.query))
                rest = url.path[len(PREFIX):].strip("/")
                body = self._body() if method in ("PATCH", "POST") else None
                if rest == "revision" or rest.startswith("revision/"):
                    self._revision(method, urllib.parse.unquote(rest[len("revision/"):]) if "/" in rest else "", body)
                    return
                path = [urllib.parse.unquote(p) for p in rest.split("/") if p]
                rev = query.get("rev")
                if method == "GET":
                    self._send(200, _get(switch.config(rev), path))
                elif method == "PATCH":
                    if not rev:
                        raise ApiError(400, "Missing query parameter 'rev'")
                    self._send(200, switch.patch(rev, path, body))
                elif method == "DELETE":
                    if not rev:
                        raise ApiError(400, "Missing query parameter 'rev'")
                    switch.delete(rev, path)
                    self._send(200, {})
                else:
                    raise ApiError(405, f"The method {method} is not allowed for the requested URL.")
            except ApiError as exc:
                self._send(exc.status, exc.body())

        def _revision(self, method: str, rev_id: str, body: Any) -> None:
            if not rev_id:
                if method == "POST":
                    self._send(200, switch.create_revision())
                elif method == "GET":
                    self._send(200, switch.revisions())
                else:
                    raise ApiError(405, f"The method {method} is not allowed for the requested URL.")
                return
            if method == "GET":
                self._send(200, switch.revision(rev_id))
            elif method == "PATCH":
                if not isinstance(body, dict):
                    raise ApiError(400, "None is not of type 'object'")
                self._send(200, switch.change_state(rev_id, body))
            else:
                raise ApiError(405, f"The method {method} is not allowed for the requested URL.")

        def do_GET(self) -> None:
            self._route("GET")

        def do_PATCH(self) -> None:
            self._route("PATCH")

        def do_POST(self) -> None:
            self._route("POST")

        def do_DELETE(self) -> None:
            self._route("DELETE")

    return Handler


def _get(tree: Any, path: list[str]) -> Any:
    node = tree
    for key in path:
        if not isinstance(node, dict) or key not in node:
            raise ApiError(404, f"The requested URL was not found on the server: /nvue_v1/{'/'.join(path)}")
        node = node[key]
    return node


def serve(switch: Switch, host: str, port: int, cert: str, key: str, user: str, password: str) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), make_handler(switch, user, password))
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return server
