"""Read a host in one shell command: the framing of the agentless readers (plugins/action/dgx_facts.py,
plugins/action/host_state.py). Standard library only, Python 3.8+.

An action plugin builds one POSIX shell command from probes and runs it over the task's connection (no Python
starts on the node: a module's start costs about 4 s inside the lab's TCG VMs); the control node reads the
answer. Each probe prints one line::

    @@probe@@ NAME STATUS STDOUT STDERR

STATUS is the exit status, or ``absent`` where the tool or file is not there; STDOUT and STDERR are base64 ("-"
when empty), so that nothing a tool prints can break the framing. The node needs a POSIX shell and coreutils
(mktemp, base64, timeout, stat, sha1sum), as DGX OS and Debian have.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Callable
from typing import Any

PROBE_MARK = "@@probe@@"
_NAME = re.compile(r"^[A-Za-z0-9_.:/@+-]+$")

_PRELUDE = (
    "PATH=\"$PATH:/usr/local/sbin:/usr/sbin:/sbin:/usr/bin:/bin\"; export LC_ALL=C; "
    "e=$(mktemp) || exit 97; trap 'rm -f \"$e\"' EXIT; "
    "b() { x=$(base64 -w0); printf '%s' \"${x:--}\"; }; "
    "emit() { printf '%s %s %s %s %s\\n' " + PROBE_MARK + " \"$1\" \"$2\" \"$(printf '%s' \"$3\" | b)\" "
    "\"$(b < \"$e\")\"; : > \"$e\"; }; "
    # p NAME TOOL ARG...: the tool's answer (absent where it is not installed), bounded by timeout
    "p() { n=$1; shift; if ! command -v \"$1\" >/dev/null 2>&1; then emit \"$n\" absent ''; return; fi; "
    "o=$(timeout {timeout} \"$@\" 2>\"$e\"); emit \"$n\" $? \"$o\"; }; "
    # f NAME PATH: a file's content (absent where there is none)
    "f() { if [ -e \"$2\" ]; then o=$(cat \"$2\" 2>\"$e\"); emit \"$1\" $? \"$o\"; else emit \"$1\" absent ''; fi; }; "
    # s NAME PATH SHA1(0|1): what lstat says (kind|owner|group|uid|gid|octal mode), then the SHA-1 of a regular file
    "s() { if [ -e \"$2\" ] || [ -L \"$2\" ]; then o=$(stat -c '%F|%U|%G|%u|%g|%a' -- \"$2\" 2>\"$e\") && "
    "if [ \"$3\" = 1 ] && [ -f \"$2\" ] && [ ! -L \"$2\" ]; then o=\"$o|$(sha1sum < \"$2\" 2>\"$e\" | cut -d' ' -f1)\"; fi; "
    "emit \"$1\" $? \"$o\"; else emit \"$1\" absent ''; fi; }; "
)


class ProbeError(ValueError):
    """The node's answer is not what the probe prints: cut, a probe missing, not base64. Nothing may go on."""


def _checked(name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise ProbeError(f"not a name a probe can carry: {name!r}")
    return name


def script(probes: list[str], timeout: int) -> str:
    """The shell command: the prelude, then each probe line (from tool, file, stat)."""
    return _PRELUDE.replace("{timeout}", str(int(timeout))) + "".join(probes) + "exit 0"


def tool(name: str, argv: list[str]) -> str:
    return f"p {shlex.quote(_checked(name))} {' '.join(shlex.quote(a) for a in argv)}; "


def file(name: str, path: str) -> str:
    return f"f {shlex.quote(_checked(name))} {shlex.quote(path)}; "


def stat(name: str, path: str, sha1: bool) -> str:
    return f"s {shlex.quote(_checked(name))} {shlex.quote(path)} {1 if sha1 else 0}; "


def raw_line(shell: str) -> str:
    """A line of shell between probes (a condition on what is there), written by the caller."""
    return shell.rstrip("; ") + "; "


def _b64(field: str) -> str:
    return "" if field == "-" else base64.b64decode(field, validate=True).decode("utf-8", errors="replace")


def read(text: str, wanted: list[str]) -> dict[str, tuple[str, str, str]]:
    """The probe lines of an answer: name -> (status, stdout, stderr). Anything else on stdout (a login banner)
    is ignored; a probe of wanted that did not answer, a line cut short or not base64 is a ProbeError."""
    out: dict[str, tuple[str, str, str]] = {}
    for line in text.splitlines():
        cells = line.split(" ")
        if cells[0] != PROBE_MARK:
            continue
        if len(cells) != 5:
            raise ProbeError(f"a probe line is cut: {line[:200]!r}")
        try:
            out[cells[1]] = (cells[2], _b64(cells[3]), _b64(cells[4]))
        except ValueError as exc:
            raise ProbeError(f"probe {cells[1]} is not base64: {exc}") from None
    missing = [n for n in wanted if n not in out]
    if missing:
        raise ProbeError(f"the node's answer lacks the probe(s) {', '.join(missing)}")
    return out


def ran(answers: dict[str, tuple[str, str, str]], name: str) -> tuple[int, str, str] | None:
    """(rc, stdout, stderr) of a probe that ran; None where its tool or file was absent."""
    status, out, err = answers[name]
    return None if status == "absent" else (int(status), out, err)


def run_and_judge(run: Callable[[str], Any], host: str, what: str, command: str,
                  judge: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
    """An action plugin's read: run the command through ``run`` (cumulus_switch.action_runner: the task's
    connection and become) and judge its stdout on the control node. A shell that failed, or an answer judge
    refuses (a ValueError: ProbeError, or a refusal of its own), is a failed result naming the host."""
    raw = run(command)
    if raw.rc != 0:
        return {"failed": True,
                "msg": f"{host}: {what} failed on the node (rc={raw.rc}): {raw.output()[-1000:]}; nothing was "
                       "changed. Fix: the node needs a POSIX shell with coreutils (mktemp, base64, timeout, stat, "
                       "sha1sum); see the output above."}
    try:
        return judge(raw.stdout)
    except ValueError as exc:
        return {"failed": True, "msg": f"{host}: {exc}; nothing was changed"}
