"""MLNX-OS management client: the JSON API over HTTPS, with the SSH CLI as a fallback.

JSON API (MLNX-OS / Onyx, "web https enable"):
  1. POST /admin/launch?script=rh&template=login&action=login, form fields f_user_id and f_password; the switch
     answers with a `session` cookie (and a redirect to its dashboard). No cookie means the login was refused.
  2. POST /admin/launch?script=json with {"commands": [...]}; the answer is {"results": [{"executed_command",
     "status": "OK"|"ERROR", "status_message", "data"}, ...]}, one per command. Whether the switch stops at the
     first failing command is not documented: every result is checked, and `configuration write` is never in the
     same request as the changes (the caller sends it after every change came back OK). Configuration commands
     need no `configure terminal` there; `interface ib P` opens a context that the following commands of the
     same request share, up to `exit`, so a request never ends inside such a block.
     The API needs both `web https enable` and `json-gw enable` on the switch: with the gateway off the switch
     answers the request with something that is not JSON, and the client falls back to the SSH CLI (nothing was
     executed) when cli_fallback is on.
CLI (paramiko): log in, `no cli session paging enable`, `enable`, `configure terminal`, then one command at a
time; a line starting with '%' is the switch's error. `show` commands get `| json-print` so that both
transports feed the same parsers. A command that asks for confirmation ("Type 'yes' to continue", "[yes/no]")
is answered `no` and reported as an error at once: the client never sends such commands on purpose, and never
waits on a question.

Every error carries the switch's own text. The password never appears in a message: it is only sent in the
login form / SSH authentication, and every message is built from other fields.
"""

from __future__ import annotations

import contextlib
import json
import re
import ssl
import time
from dataclasses import dataclass
from http.cookiejar import CookieJar
from typing import TYPE_CHECKING, Any
from urllib.error import HTTPError, URLError
from urllib.parse import urlencode

from ansible.module_utils.strict_json import kind, loads

try:  # inside Ansible (and in the tests, which put ansible on the path)
    from ansible.module_utils.urls import Request, SSLValidationError
except ImportError:  # pragma: no cover - the client is also usable without Ansible
    Request = None

    class SSLValidationError(Exception):  # type: ignore[no-redef]
        pass

if TYPE_CHECKING:  # paramiko is imported when the SSH CLI is used (CliTransport.connect), not before
    import paramiko


LOGIN_PATH = "/admin/launch?script=rh&template=login&action=login"
JSON_PATH = "/admin/launch?script=json"
LOGOUT_PATH = "/admin/launch?script=rh&template=logout"
# hostname [standalone: master] > | # | (config) # | (config interface ib 1/1) #
PROMPT_RE = re.compile(r"(?m)^\S+ \[[^\]]*\] (?:\([^)]*\) )?[>#] ?$")
CONFIRM_RE = re.compile(r"(?i)(type 'yes' to continue|\[yes/no\]|\(yes/no\))[^\n]*$")


class MlnxosError(Exception):
    """Anything that went wrong talking to the switch; str() is safe to show (no secret in it)."""


class MlnxosConnectError(MlnxosError):
    """The management endpoint could not be reached at all (refused, timeout, no route): another transport may."""


class MlnxosAuthError(MlnxosError):
    pass


class MlnxosGatewayError(MlnxosConnectError):
    """The web server answered but the JSON gateway did not (json-gw off): nothing was executed."""


class MlnxosConfirmationError(MlnxosError):
    """The switch asked a yes/no question; it was declined."""

    def __init__(self, question: str):
        self.question = question
        super().__init__(f"the switch asked for confirmation ({question!r}); declined, the command was not run")


class MlnxosCommandError(MlnxosError):
    def __init__(self, command: str, message: str, transport: str, index: int = 0):
        self.command = command
        self.switch_message = message
        self.index = index  # position of the failed command in the batch: those before it were applied
        super().__init__(f"the switch rejected '{command}' ({transport}): {message}")


@dataclass
class Endpoint:
    host: str
    username: str
    password: str
    api_port: int = 443
    ssh_port: int = 22
    validate_certs: bool = True
    ca_path: str | None = None
    timeout: int = 30
    ssh_host_key_checking: bool = True
    ssh_known_hosts: str | None = None

    def where(self, port: int) -> str:
        return f"{self.host}:{port}"


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "********") if secret else text


def check_results(commands: list[str], payload: Any, transport: str = "json api") -> list[Any]:
    """Pure check of a JSON API answer: one OK result per command, else MlnxosCommandError with the switch's text."""
    if isinstance(payload, dict) and "results" in payload:
        results = payload["results"]
    elif isinstance(payload, dict) and "status" in payload:
        results = [payload]
    else:
        raise MlnxosError(f"unexpected JSON API answer (no 'results'): {str(payload)[:300]}")
    if not isinstance(results, list):
        raise MlnxosError(f"unexpected JSON API answer: 'results' is {kind(results)}, expected a list")
    if len(results) > len(commands):
        raise MlnxosError(f"unexpected JSON API answer: {len(results)} results for {len(commands)} commands (another "
                          "request's results mixed in?); nothing of it is used")
    data: list[Any] = []
    for index, command in enumerate(commands):
        if index >= len(results):
            raise MlnxosCommandError(command, "not executed: the switch stopped before this command "
                                     f"({len(results)} of {len(commands)} results)", transport, index)
        result = results[index]
        if not isinstance(result, dict):
            raise MlnxosError(f"unexpected JSON API answer: result {index + 1} (for '{command}') is {kind(result)}, "
                              "expected an object with status and data")
        status = str(result.get("status", "")).upper()
        if status != "OK":
            message = str(result.get("status_message") or "").strip() or f"status {status or 'missing'}"
            raise MlnxosCommandError(str(result.get("executed_command") or command), message, transport, index)
        executed = " ".join(str(result.get("executed_command") or "").split())
        if executed and executed.lower() != " ".join(command.split()).lower():
            raise MlnxosError(f"unexpected JSON API answer: result {index + 1} is for '{executed}', the request sent "
                              f"'{command}' there (results out of order or from another request)")
        data.append(result.get("data"))
    return data


def batches(commands: list[str], size: int) -> list[tuple[int, list[str]]]:
    """(start index, chunk) of at most `size` commands, an `interface ...` ... `exit` block always whole in one
    chunk (a block longer than `size` is a chunk of its own)."""
    units: list[list[str]] = []
    inside = False
    for command in commands:
        words = command.split()
        if inside:
            units[-1].append(command)
            inside = words != ["exit"]
        else:
            units.append([command])
            inside = len(words) == 3 and words[0] == "interface"
    result: list[tuple[int, list[str]]] = []
    start, chunk = 0, list[str]()
    for unit in units:
        if chunk and len(chunk) + len(unit) > size:
            result.append((start, chunk))
            start, chunk = start + len(chunk), []
        chunk = chunk + unit
    if chunk:
        result.append((start, chunk))
    return result


class JsonApiTransport:
    name = "json api"
    BATCH = 32  # commands per request: a first apply of 40 ports is ~100 commands

    def __init__(self, endpoint: Endpoint):
        if Request is None:  # pragma: no cover
            raise MlnxosError("ansible.module_utils.urls is required for the JSON API")
        self.endpoint = endpoint
        self.cookies = CookieJar()
        self.request = Request(
            cookies=self.cookies,
            validate_certs=endpoint.validate_certs,
            ca_path=endpoint.ca_path,
            timeout=endpoint.timeout,
            follow_redirects="all",
        )
        self.base = f"https://{endpoint.host}:{endpoint.api_port}"
        self.logged_in = False
        self.answered_json = False

    def _open(self, method: str, path: str, data: bytes | None, headers: dict[str, str]):
        where = self.endpoint.where(self.endpoint.api_port)
        try:
            return self.request.open(method, self.base + path, data=data, headers=headers)
        except HTTPError as exc:
            body = exc.read().decode("utf-8", "replace")[:500] if exc.fp else ""
            raise MlnxosError(f"JSON API at {where} answered HTTP {exc.code} {exc.reason} for {path}: "
                              f"{_scrub(body, self.endpoint.password)}") from None
        except SSLValidationError as exc:
            raise MlnxosError(f"TLS verification of {where} failed: {exc}. Give the CA that signed the switch's "
                              "certificate (ca_path), or install a certificate the control node trusts; "
                              "validate_certs=false turns verification off") from None
        except ssl.SSLError as exc:
            raise MlnxosError(f"TLS with {where} failed: {exc}") from None
        except (TimeoutError, URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, ssl.SSLError):
                raise MlnxosError(f"TLS verification of {where} failed: {reason}. Give the CA that signed the "
                                  "switch's certificate (ca_path); validate_certs=false turns verification off"
                                  ) from None
            raise MlnxosConnectError(f"cannot reach the JSON API at {where}: {reason}") from None

    def login(self) -> None:
        self.cookies.clear()
        form = urlencode({"f_user_id": self.endpoint.username, "f_password": self.endpoint.password}).encode()
        response = self._open("POST", LOGIN_PATH, form, {"Content-Type": "application/x-www-form-urlencoded"})
        response.read()
        if not any(cookie.name == "session" for cookie in self.cookies):
            raise MlnxosAuthError(
                f"login to the JSON API at {self.endpoint.where(self.endpoint.api_port)} as "
                f"'{self.endpoint.username}' was refused (no session cookie): check qm8700_api_user and "
                "the password, and that the user may use the web interface")
        self.logged_in = True

    def run(self, commands: list[str]) -> list[Any]:
        """Run the commands in requests of about BATCH commands (each request must finish within the timeout),
        never cutting an `interface ib P` ... `exit` block; the first failing command stops everything after it,
        and its index counts from the first command."""
        data: list[Any] = []
        for start, chunk in batches(commands, self.BATCH):
            try:
                data.extend(self._request(chunk))
            except MlnxosCommandError as exc:
                exc.index += start
                raise
        return data

    def _request(self, commands: list[str]) -> list[Any]:
        if not self.logged_in:
            self.login()
        body = json.dumps({"commands": commands}).encode()
        for attempt in (1, 2):
            response = self._open("POST", JSON_PATH, body, {"Content-Type": "application/json"})
            text = response.read().decode("utf-8", "replace")
            try:
                payload = loads(text)
            except ValueError as exc:
                # An expired session comes back as the login page: log in again once.
                if attempt == 1 and "login" in (response.geturl() or "") + text[:2000].lower():
                    self.login()
                    continue
                if text.lstrip().startswith(("{", "[")):
                    # JSON that breaks off, or names a key twice: the gateway answered, the answer is unusable.
                    raise MlnxosError(f"JSON API at {self.endpoint.where(self.endpoint.api_port)} answered JSON that "
                                      f"cannot be read ({exc}): {_scrub(text[:200], self.endpoint.password)}"
                                      ) from None
                if not self.answered_json:
                    # Logged in, but the first command request got no JSON: the JSON gateway is off, and
                    # nothing was executed - another transport may run the same commands.
                    raise MlnxosGatewayError(
                        f"the web server at {self.endpoint.where(self.endpoint.api_port)} accepted the login but "
                        "its JSON API did not answer JSON (is `json-gw enable` set on the switch? see the role's "
                        f"switch prerequisites): {_scrub(text[:200], self.endpoint.password)}") from None
                raise MlnxosError(f"JSON API at {self.endpoint.where(self.endpoint.api_port)} did not answer "
                                  f"JSON: {_scrub(text[:300], self.endpoint.password)}") from None
            self.answered_json = True
            return check_results(commands, payload, self.name)
        raise MlnxosError("JSON API session could not be re-established")  # pragma: no cover

    def close(self) -> None:
        """Log out (switches allow few web sessions), best effort: the work is done, a failed logout is not news."""
        if self.logged_in:
            with contextlib.suppress(MlnxosError):
                self._open("GET", LOGOUT_PATH, None, {}).read()
        self.logged_in = False
        self.cookies.clear()


class CliTransport:
    """SSH CLI fallback. Show commands are run with `| json-print`; config commands in `configure terminal`."""

    name = "ssh cli"

    def __init__(self, endpoint: Endpoint):
        self.endpoint = endpoint
        self.client: paramiko.SSHClient | None = None
        self.channel: paramiko.Channel | None = None

    def _open_channel(self) -> paramiko.Channel:
        if self.channel is None:
            raise MlnxosError(f"no CLI session to {self.endpoint.where(self.endpoint.ssh_port)} is open")
        return self.channel

    def _read_until_prompt(self, timeout: float | None = None) -> str:
        limit = timeout or self.endpoint.timeout
        deadline = time.monotonic() + limit
        buffer = ""
        channel = self._open_channel()
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            channel.settimeout(remaining)
            try:
                chunk = channel.recv(65536)  # blocks until the switch sends something
            except TimeoutError:
                break
            if not chunk:
                raise MlnxosError(f"the CLI session to {self.endpoint.where(self.endpoint.ssh_port)} was closed; "
                                  f"last output: {buffer[-300:]!r}")
            buffer += chunk.decode("utf-8", "replace")
            if PROMPT_RE.search(buffer.rstrip("\r\n ") + " "):
                return buffer.replace("\r", "")
            if CONFIRM_RE.search(buffer.replace("\r", "").rstrip()):
                # Never answer yes on anyone's behalf, and never wait on the question: decline, then report.
                channel.send(b"no\n")
                question = buffer.replace("\r", "").strip().splitlines()[-1]
                with contextlib.suppress(MlnxosError):
                    self._read_until_prompt(timeout=10)
                raise MlnxosConfirmationError(question)
        raise MlnxosError(f"no CLI prompt from {self.endpoint.where(self.endpoint.ssh_port)} within {limit}s; "
                          f"last output: {buffer[-300:]!r}")

    def connect(self) -> None:
        try:
            import paramiko
        except ImportError as exc:  # pragma: no cover
            raise MlnxosError("paramiko is required for the SSH CLI transport") from exc
        client = paramiko.SSHClient()
        if self.endpoint.ssh_host_key_checking:
            client.load_system_host_keys()
            if self.endpoint.ssh_known_hosts:
                client.load_host_keys(self.endpoint.ssh_known_hosts)
            client.set_missing_host_key_policy(paramiko.RejectPolicy())
        else:
            client.set_missing_host_key_policy(paramiko.AutoAddPolicy())
        where = self.endpoint.where(self.endpoint.ssh_port)
        try:
            client.connect(self.endpoint.host, port=self.endpoint.ssh_port, username=self.endpoint.username,
                           password=self.endpoint.password, timeout=self.endpoint.timeout,
                           allow_agent=False, look_for_keys=False, banner_timeout=self.endpoint.timeout)
        except paramiko.AuthenticationException:
            raise MlnxosAuthError(f"SSH login to {where} as '{self.endpoint.username}' was refused") from None
        except paramiko.BadHostKeyException as exc:
            raise MlnxosError(f"SSH host key of {where} does not match the known hosts ({exc}): the switch was "
                              "replaced or someone is in between; check it before updating the known hosts") from None
        except paramiko.SSHException as exc:
            if "known_hosts" in str(exc):
                raise MlnxosError(
                    f"SSH host key of {where} is not in the known hosts, so the password is not sent: add the "
                    "switch's key to ssh_known_hosts (or ~/.ssh/known_hosts), or turn ssh_host_key_checking "
                    "off for this switch") from None
            raise MlnxosError(f"SSH to {where} failed: {_scrub(str(exc), self.endpoint.password)}") from None
        except (TimeoutError, OSError) as exc:
            raise MlnxosConnectError(f"cannot reach the SSH CLI at {where}: {exc}") from None
        self.client = client
        self.channel = client.invoke_shell(width=512, height=1000)
        self._read_until_prompt()
        for setup in ("no cli session paging enable", "enable", "configure terminal"):
            self._command(setup)

    def _command(self, command: str) -> str:
        self._open_channel().send((command + "\n").encode())
        try:
            output = self._read_until_prompt()
        except MlnxosConfirmationError as exc:
            raise MlnxosCommandError(command, str(exc), self.name) from None
        lines = output.split("\n")
        # Drop the echo of the command and the trailing prompt.
        if lines and lines[0].strip().endswith(command.strip()):
            lines = lines[1:]
        if lines and PROMPT_RE.match(lines[-1] + (" " if not lines[-1].endswith(" ") else "")):
            lines = lines[:-1]
        errors = [line for line in lines if line.startswith("%")]
        if errors:
            raise MlnxosCommandError(command, " ".join(line.strip() for line in lines if line.strip()), self.name)
        return "\n".join(lines).strip()

    def run(self, commands: list[str]) -> list[Any]:
        if self.channel is None:
            self.connect()
        data: list[Any] = []
        for index, command in enumerate(commands):
            if command.startswith("show "):
                text = self._command(command + " | json-print")
                try:
                    data.append(loads(text) if text else None)
                except ValueError as exc:
                    raise MlnxosError(f"'{command} | json-print' did not print JSON ({exc}): {text[:300]!r}") from None
            else:
                try:
                    data.append(self._command(command) or None)
                except MlnxosCommandError as exc:
                    exc.index = index
                    raise
        return data

    def close(self) -> None:
        # The channel is None when the shell could not be opened after the login (invoke_shell failed).
        if self.channel is not None:
            with contextlib.suppress(OSError):
                self.channel.send(b"exit\nexit\nexit\n")
        if self.client is not None:
            self.client.close()
        self.client = None
        self.channel = None


class Switch:
    """One management session. transport: 'json' or 'cli'; cli_fallback: when the JSON API cannot be
    reached at all (refused, timeout), use the SSH CLI instead. Refused logins and failed TLS verification
    never fall back: they are errors to fix, not to route around."""

    def __init__(self, endpoint: Endpoint, transport: str = "json", cli_fallback: bool = False):
        self.endpoint = endpoint
        self.cli_fallback = cli_fallback
        self.transport = CliTransport(endpoint) if transport == "cli" else JsonApiTransport(endpoint)
        self.warnings: list[str] = []

    @property
    def transport_name(self) -> str:
        return self.transport.name

    def run(self, commands: list[str]) -> list[Any]:
        try:
            return self.transport.run(commands)
        except MlnxosConnectError as exc:
            # Only a switch whose JSON API could not be reached at all, or whose JSON gateway is off (no login yet, so nothing was sent) is
            # retried over SSH; a connection lost in the middle of a batch is reported, not replayed elsewhere.
            if not (self.cli_fallback and isinstance(self.transport, JsonApiTransport)
                    and (isinstance(exc, MlnxosGatewayError) or not self.transport.logged_in)):
                raise
            self.warnings.append(f"{exc}; falling back to the SSH CLI on port {self.endpoint.ssh_port}")
            self.transport = CliTransport(self.endpoint)
            try:
                return self.transport.run(commands)
            except MlnxosConnectError as cli_exc:
                raise MlnxosConnectError(f"{exc}; and the SSH CLI fallback failed too: {cli_exc}") from None

    def close(self) -> None:
        self.transport.close()


# Connection options shared by the mlnxos_* modules (documented in each module's DOCUMENTATION).
CONNECTION_ARGUMENT_SPEC: dict[str, dict[str, Any]] = {
    "api_host": {"type": "str", "required": True},
    "api_port": {"type": "int", "default": 443},
    "ssh_port": {"type": "int", "default": 22},
    "api_user": {"type": "str", "required": True, "aliases": ["username"]},
    "api_password": {"type": "str", "required": True, "no_log": True, "aliases": ["password"]},
    "transport": {"type": "str", "default": "json", "choices": ["json", "cli"]},
    "cli_fallback": {"type": "bool", "default": False},
    "validate_certs": {"type": "bool", "default": True},
    "ca_path": {"type": "path"},
    "timeout": {"type": "int", "default": 30},
    "ssh_host_key_checking": {"type": "bool", "default": True},
    "ssh_known_hosts": {"type": "path"},
    "name": {"type": "str"},
}


def switch_label(params: dict[str, Any]) -> str:
    """How messages name the switch: its inventory name when given, else its address."""
    if params.get("name"):
        return f"{params['name']} ({params['api_host']})"
    return str(params["api_host"])


def switch_from_params(params: dict[str, Any]) -> Switch:
    endpoint = Endpoint(
        host=params["api_host"], username=params["api_user"], password=params["api_password"],
        api_port=params["api_port"], ssh_port=params["ssh_port"], validate_certs=params["validate_certs"],
        ca_path=params.get("ca_path") or None, timeout=params["timeout"],
        ssh_host_key_checking=params["ssh_host_key_checking"], ssh_known_hosts=params.get("ssh_known_hosts") or None,
    )
    return Switch(endpoint, params["transport"], params["cli_fallback"])
