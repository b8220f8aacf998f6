"""The MLNX-OS SSH CLI (paramiko server): password login, prompts `host [standalone: master] >`, `#`,
`(config) #`, errors as lines starting with '%', text `show` output (JSON with `| json-print`)."""

from __future__ import annotations

import hmac
import logging
import socket
import threading
from pathlib import Path

import paramiko
from paramiko.common import (
    AUTH_FAILED,
    AUTH_SUCCESSFUL,
    OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED,
    OPEN_SUCCEEDED,
)

from .switch import CommandError, Session, Switch

# Port probes (connect, close) make paramiko log a traceback per connection: keep only real failures.
logging.getLogger("paramiko").setLevel(logging.CRITICAL)

BANNER = "\r\nNVIDIA MLNX-OS Switch Management (simulated)\r\n\r\n"


def load_host_key(path: Path) -> paramiko.PKey:
    """Persisted so that the key, like a real switch's, survives restarts."""
    if path.exists():
        return paramiko.RSAKey.from_private_key_file(str(path))
    key = paramiko.RSAKey.generate(2048)
    path.parent.mkdir(parents=True, exist_ok=True)
    key.write_private_key_file(str(path))
    path.chmod(0o600)
    return key


class _Server(paramiko.ServerInterface):
    def __init__(self, switch: Switch, user: str, password: str):
        self.switch = switch
        self.user = user
        self.password = password
        self.authenticated_user: str | None = None
        self.exec_command: str | None = None
        self.event = threading.Event()

    def check_auth_password(self, username: str, password: str) -> int:
        ok = hmac.compare_digest(username.encode(), self.user.encode()) and \
            hmac.compare_digest(password.encode(), self.password.encode())
        self.switch.log(Session("cli", username or "-"), "<ssh login>", None, None if ok else "login refused")
        if ok:
            self.authenticated_user = username
            return AUTH_SUCCESSFUL
        return AUTH_FAILED

    def get_allowed_auths(self, username: str) -> str:
        return "password"

    def check_channel_request(self, kind: str, chanid: int) -> int:
        return OPEN_SUCCEEDED if kind == "session" else OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_pty_request(self, *args) -> bool:
        return True

    def check_channel_shell_request(self, channel) -> bool:
        self.event.set()
        return True

    def check_channel_exec_request(self, channel, command: bytes) -> bool:
        self.exec_command = command.decode("utf-8", "replace")
        self.event.set()
        return True


class CliServer:
    def __init__(self, address: tuple[str, int], switch: Switch, user: str, password: str, host_key: Path):
        self.switch = switch
        self.user = user
        self.password = password
        self.host_key = load_host_key(host_key)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(address)
        self.sock.listen(16)
        self.stopping = False

    def serve_forever(self) -> None:
        while not self.stopping:
            try:
                client, _ = self.sock.accept()
            except OSError:
                break
            threading.Thread(target=self._handle, args=(client,), daemon=True).start()

    def shutdown(self) -> None:
        self.stopping = True
        self.sock.close()

    def _run(self, session: Session, line: str) -> str:
        try:
            result = self.switch.execute(session, line)
        except CommandError as exc:
            self.switch.log(session, line, None, str(exc).split("\n")[0])
            return "% " + str(exc).replace("\n", "\r\n") + "\r\n"
        except Exception as exc:  # a simulator bug must not hang the session: report it as the switch would
            self.switch.log(session, line, None, f"internal error: {exc!r}")
            return f"% Internal error: {exc!r}\r\n"
        if line.strip():
            self.switch.log(session, line, result, None)
        if result.kind == "confirm":
            return result.text  # the question, on the line where the answer is typed: no prompt after it
        return (result.text.replace("\n", "\r\n") + "\r\n") if result.text else ""

    def _handle(self, client: socket.socket) -> None:
        transport = paramiko.Transport(client)
        transport.add_server_key(self.host_key)
        server = _Server(self.switch, self.user, self.password)
        try:
            transport.start_server(server=server)
            channel = transport.accept(30)
            if channel is None or not server.event.wait(30):
                return
            session = Session("cli", server.authenticated_user or self.user)
            if server.exec_command is not None:
                session.mode = "enable"
                output = self._run(session, server.exec_command)
                channel.sendall(output.encode())
                channel.send_exit_status(1 if output.startswith("%") else 0)
                return
            self._shell(channel, session)
        except (paramiko.SSHException, OSError, EOFError):
            return
        finally:
            transport.close()

    def _shell(self, channel: paramiko.Channel, session: Session) -> None:
        channel.sendall((BANNER + self.switch.prompt(session)).encode())
        buffer = ""
        last_cr = False  # a terminal sends CR LF or CR alone: one line either way
        while True:
            data = channel.recv(4096)
            if not data:
                return
            echo = ""
            for char in data.decode("utf-8", "replace"):
                if char in "\r\n":
                    if char == "\n" and buffer == "" and last_cr:
                        last_cr = False
                        continue
                    last_cr = char == "\r"
                    line, buffer = buffer, ""
                    channel.sendall((echo + "\r\n").encode())
                    echo = ""
                    if line.strip() in ("exit", "quit", "logout") and session.mode in ("user", "enable"):
                        return
                    output = self._run(session, line)
                    channel.sendall((output + ("" if session.pending is not None else
                                               self.switch.prompt(session))).encode())
                elif char in "\x7f\x08":
                    if buffer:
                        buffer = buffer[:-1]
                        echo += "\x08 \x08"
                elif char == "\x03":
                    buffer = ""
                    echo += "\r\n" + self.switch.prompt(session)
                else:
                    buffer += char
                    echo += char  # a terminal echoes what is typed; one packet per chunk, not per character
            if echo:
                channel.sendall(echo.encode())
