"""The MLNX-OS web/JSON API over HTTPS: form login with a `session` cookie, then JSON command requests.

POST /admin/launch?script=rh&template=login&action=login   f_user_id, f_password -> 302 to the dashboard +
     Set-Cookie: session=...; a refused login gets the login page again, without a cookie.
POST /admin/launch?script=rh&template=json-request&action=json-login   {"username", "password"} (newer releases)
POST /admin/launch?script=json   {"commands": [...]} -> {"results": [...]} (stops at the first error),
     or {"cmd": "..."} -> one result object. Without a valid session: 302 to the login page.
"""

from __future__ import annotations

import hmac
import json
import secrets
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .switch import CommandError, Session, Switch

SESSION_TTL = 3600
LOGIN_PAGE = (b"<html><head><title>MLNX-OS Login</title></head><body>"
              b"<form method='post' action='/admin/launch?script=rh&amp;template=login&amp;action=login'>"
              b"<input name='f_user_id'/><input type='password' name='f_password'/></form>%s</body></html>")


class ApiServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], switch: Switch, user: str, password: str,
                 cert: str, key: str):
        super().__init__(address, ApiHandler)
        self.switch = switch
        self.user = user
        self.password = password
        self.sessions: dict[str, tuple[str, float]] = {}
        self.sessions_lock = threading.Lock()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(cert, key)
        self.socket = context.wrap_socket(self.socket, server_side=True)

    def check_password(self, user: str, password: str) -> bool:
        return hmac.compare_digest(user.encode(), self.user.encode()) and \
            hmac.compare_digest(password.encode(), self.password.encode())

    def new_session(self, user: str) -> str:
        token = secrets.token_hex(16)
        with self.sessions_lock:
            self.sessions[token] = (user, time.time() + SESSION_TTL)
        return token

    def session_user(self, token: str | None) -> str | None:
        if not token:
            return None
        with self.sessions_lock:
            entry = self.sessions.get(token)
            if entry is None or entry[1] < time.time():
                self.sessions.pop(token, None)
                return None
            return entry[0]

    def drop_session(self, token: str | None) -> None:
        with self.sessions_lock:
            self.sessions.pop(token or "", None)


class ApiHandler(BaseHTTPRequestHandler):
    server: ApiServer
    protocol_version = "HTTP/1.1"
    server_version = "MLNX-OS-sim"

    def log_message(self, format: str, *args: Any) -> None:
        return  # requests are logged as commands by the switch; nothing else (no form data) is printed

    def _send(self, status: int, body: bytes, content_type: str = "text/html",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def _json(self, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._send(200, json.dumps(payload).encode(), "application/json", headers)

    def _cookie(self) -> str | None:
        for part in self.headers.get("Cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == "session":
                return value
        return None

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.path).query).items()}

    def _set_cookie(self, token: str) -> dict[str, str]:
        return {"Set-Cookie": f"session={token}; Path=/; Secure; HttpOnly"}

    def do_GET(self) -> None:
        query = self._query()
        if urlsplit(self.path).path != "/admin/launch":
            self._send(404, b"Not Found")
            return
        template = query.get("template")
        if template == "logout":
            self.server.drop_session(self._cookie())
            self._send(302, b"", headers={"Location": "/admin/launch?script=rh&template=login"})
            return
        if template == "dashboard" and self.server.session_user(self._cookie()):
            self._send(200, b"<html><body>MLNX-OS dashboard: " + self.server.switch.name.encode() + b"</body></html>")
            return
        self._send(200, LOGIN_PAGE % b"")

    def do_POST(self) -> None:
        query = self._query()
        body = self._body()
        if urlsplit(self.path).path != "/admin/launch":
            self._send(404, b"Not Found")
            return
        if query.get("script") == "rh" and query.get("action") == "login":
            form = {k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()}
            user = form.get("f_user_id", "")
            self._log_login(user, self.server.check_password(user, form.get("f_password", "")))
            if self.server.check_password(user, form.get("f_password", "")):
                token = self.server.new_session(user)
                headers = {"Location": "/admin/launch?script=rh&template=dashboard", **self._set_cookie(token)}
                self._send(302, b"", headers=headers)
            else:
                self._send(200, LOGIN_PAGE % b"<p class='error'>Login failed: incorrect username or password</p>")
            return
        if query.get("script") == "rh" and query.get("action") == "json-login":
            try:
                creds = json.loads(body or b"{}")
            except ValueError:
                creds = {}
            user = str(creds.get("username", ""))
            ok = self.server.check_password(user, str(creds.get("password", "")))
            self._log_login(user, ok)
            if ok:
                self._json({"status": "OK", "status_message": "Successfully logged-in"},
                           self._set_cookie(self.server.new_session(user)))
            else:
                self._json({"status": "ERROR", "status_message": "Invalid username or password"})
            return
        if query.get("script") == "json":
            self._commands(body)
            return
        self._send(404, b"Not Found")

    def _log_login(self, user: str, ok: bool) -> None:
        session = Session("json", user or "-")
        self.server.switch.log(session, "<web login>", None, None if ok else "login refused")

    def _commands(self, body: bytes) -> None:
        status = self.server.switch.faults().get("json_api_http_status")
        if status:
            self._send(int(status), b"<html><body>Service Unavailable</body></html>")
            return
        user = self.server.session_user(self._cookie())
        if user is None:
            self._send(302, b"", headers={"Location": "/admin/launch?script=rh&template=login"})
            return
        if not self.server.switch.running.get("json_gw", True):
            # `no json-gw enable`: the web server still logs users in, the JSON gateway does not answer (a page,
            # not JSON; tests/fixtures/mlnxos/constructed/README.md).
            self._send(200, b"<html><head><title>MLNX-OS</title></head><body>JSON gateway is disabled</body></html>")
            return
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            self._json({"status": "ERROR", "executed_command": "", "status_message": "Invalid JSON request",
                        "data": ""})
            return
        single = "cmd" in request
        commands = [request["cmd"]] if single else request.get("commands")
        if not isinstance(commands, list) or not all(isinstance(c, str) for c in commands):
            self._json({"status": "ERROR", "executed_command": "",
                        "status_message": "Request must hold 'cmd' (string) or 'commands' (list of strings)",
                        "data": ""})
            return
        # JSON API commands run in configuration mode; the list shares one context and stops at the first error.
        session = Session("json", user, mode="config")
        results = []
        for command in commands:
            try:
                result = self.server.switch.execute(session, command)
            except Exception as exc:  # CommandError: the switch's text; anything else: a simulator bug, reported
                message = str(exc).split("\n")[0] if isinstance(exc, CommandError) else f"Internal error: {exc!r}"
                self.server.switch.log(session, command, None, message)
                results.append({"executed_command": command, "status": "ERROR", "status_message": message,
                                "data": ""})
                break
            self.server.switch.log(session, command, result, None)
            results.append({"executed_command": command, "status": "OK", "status_message": "",
                            "data": result.data if result.data is not None else ""})
        self._json(results[0] if single else {"results": results})
