"""The files method without Python on the switch: shell commands over SSH, everything else on the control node.

Cumulus Linux 4.0-4.4 and 5.0-5.8 ship Python 3.7.3, which ansible-core 2.19 refuses, so the sn3700v role runs
no module on the switch. Its action plugins (plugins/action/cumulus_*.py) hand every command to the
connection as a plain shell command line (what ``ansible.builtin.raw`` does) through a ``Run`` callable, and
do the reading, merging, checking and diffing here, on the control node:

* files are read with ``cat``; a new file is written as a candidate next to the live one (same directory, so
  the final ``mv`` is one rename), given the live file's mode and owner, checked by the switch's own parser
  (``ifup -a -s -i CANDIDATE``, ``vtysh --dryrun --inputfile CANDIDATE``), and only then renamed over the live
  file; a candidate that fails its check is removed and the live file is left as it was;
* command outputs that are parsed (``ip -j``, ``bridge -j``, ``clagctl -j``) must be JSON, or the task fails
  naming the command, its exit status and what it printed (fail closed).

Pure text functions (``replace_block``, ``set_lines``) and the remote steps are kept apart so both can be tested
on the control node (tests/fabric_sn3700v/test_agentless.py runs the remote steps through ``sh -c``).
"""

from __future__ import annotations

import base64
import json
import posixpath
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.cumulus_live import compare, shape_problems

FRR_MARKER = "! {mark} sn3700v storage fabric (managed by Ansible role sn3700v)"
# ifupdown2 `source` patterns the role expands on the switch's shell to find included files: a pattern with
# any other character is refused rather than handed to a shell.
SAFE_PATTERN_RE = re.compile(r"^[A-Za-z0-9_./*?\[\]-]+$")
# Exit status the read script uses for "no such file" (cat's own failures exit 1).
MISSING_RC = 3


@dataclass(frozen=True)
class Raw:
    """What one shell command on the switch returned."""

    command: str
    rc: int
    stdout: str
    stderr: str

    def output(self, limit: int = 800) -> str:
        text = (self.stderr.strip() or self.stdout.strip())
        return text[:limit]


Run = Callable[[str], Raw]


def action_runner(action: Any) -> Run:
    """A Run for an action plugin: each command goes through the task's connection (with become, as
    ansible.builtin.raw sends it), without a TTY so that the output is exact (a TTY turns every newline of a
    file read with cat into CRLF and mixes stderr into stdout)."""
    connection = action._connection
    for option in ("use_tty", "pty"):  # ssh's and paramiko_ssh's names for it
        if connection.has_option(option):
            connection.set_option(option, False)

    def run(command: str) -> Raw:
        return raw_result(command, action._low_level_execute_command(command, sudoable=True))

    return run


def raw_result(command: str, result: dict[str, Any]) -> Raw:
    """A Raw from what ActionBase._low_level_execute_command returned (no exit status counts as a failure)."""
    rc = result.get("rc")
    return Raw(command, rc if isinstance(rc, int) else 1, str(result.get("stdout", "")),
               str(result.get("stderr", "")))


class SwitchError(Exception):
    """A command on the switch failed or printed something that cannot be parsed: nothing may go on."""


def _q(value: str) -> str:
    return shlex.quote(value)


def expect(raw: Raw, what: str) -> Raw:
    """``raw`` when it exited 0, else a SwitchError naming the command, its status and its output."""
    if raw.rc != 0:
        raise SwitchError(f"{what}: `{raw.command}` failed on the switch (rc={raw.rc}): {raw.output()}")
    return raw


def parse_json(raw: Raw, what: str) -> Any:
    """The JSON a command printed; fails closed on a non-zero exit or anything that is not JSON."""
    expect(raw, what)
    try:
        return json.loads(raw.stdout)
    except ValueError as exc:
        raise SwitchError(f"{what}: `{raw.command}` printed no JSON ({exc}): {raw.stdout.strip()[:500]!r}") from exc


# --- pure text edits ------------------------------------------------------------------------------------------


def replace_block(text: str, block: str, marker: str = FRR_MARKER) -> str:
    """``text`` with the marked block set to ``block`` (ansible.builtin.blockinfile's layout: the BEGIN line, the
    block, the END line; an existing block is replaced where it is, a new one is appended at the end)."""
    begin, end = marker.replace("{mark}", "BEGIN"), marker.replace("{mark}", "END")
    lines = text.splitlines()
    new = [begin, *block.strip("\n").splitlines(), end]
    try:
        start = lines.index(begin)
        stop = lines.index(end, start)
    except ValueError:
        return "\n".join([*lines, *new]) + "\n"
    return "\n".join([*lines[:start], *new, *lines[stop + 1:]]) + "\n"


def _key_of(line: str) -> str | None:
    return line.split("=", 1)[0].strip() if "=" in line and not line.lstrip().startswith("#") else None


def set_lines(text: str, settings: dict[str, str], key_of: Callable[[str], str | None] = _key_of) -> str:
    """``KEY=VALUE`` files (/etc/cumulus/ports.conf; the DGX's sysctl.d file with its own ``key_of``): each key's
    first line set to ``KEY=VALUE`` where it is (later duplicates dropped), a key without a line appended; every
    other line kept verbatim."""
    lines = text.splitlines()
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        key = key_of(line)
        if key in settings:
            if key not in seen:
                out.append(f"{key}={settings[key]}")
                seen.add(key)
            continue
        out.append(line)
    out += [f"{key}={value}" for key, value in settings.items() if key not in seen]
    return "\n".join(out) + "\n"


# --- remote steps ---------------------------------------------------------------------------------------------


def read_file(run: Run, path: str) -> str | None:
    """The file's text, or None when it does not exist."""
    raw = run(f"if [ -e {_q(path)} ]; then cat -- {_q(path)}; else exit {MISSING_RC}; fi")
    if raw.rc == MISSING_RC:
        return None
    return expect(raw, f"reading {path}").stdout


def expand_sources(run: Run, base: str, patterns: list[str]) -> list[str]:
    """The regular files the ``source`` patterns of an interfaces file name on the switch (globbed there)."""
    files: list[str] = []
    for pattern in patterns:
        full = pattern if pattern.startswith("/") else posixpath.join(posixpath.dirname(base), pattern)
        if not SAFE_PATTERN_RE.match(full):
            raise SwitchError(f"{base} sources {pattern!r}: a pattern with characters other than letters, digits, "
                              "_ . / * ? [ ] - is not expanded (nothing was changed); rename the included files")
        raw = expect(run(f"for f in {full}; do if [ -f \"$f\" ]; then printf '%s\\n' \"$f\"; fi; done"),
                     f"listing the files {base} sources")
        files += [line for line in raw.stdout.splitlines() if line]
    return sorted(set(files))


def write_candidate(run: Run, path: str, text: str) -> str:
    """A candidate copy of ``path`` with ``text`` (same directory, the live file's mode and owner); its name."""
    directory, name = posixpath.split(path)
    payload = base64.b64encode(text.encode()).decode()
    script = (
        f"set -e; t=$(mktemp {_q(posixpath.join(directory or '.', '.' + name + '.'))}XXXXXX); "
        f"printf '%s' {_q(payload)} | base64 -d > \"$t\"; "
        f"if [ -e {_q(path)} ]; then chmod --reference={_q(path)} \"$t\"; chown --reference={_q(path)} \"$t\"; "
        f"else chmod 0644 \"$t\"; fi; printf '%s\\n' \"$t\""
    )
    raw = expect(run(script), f"writing a candidate for {path}")
    candidate = raw.stdout.strip().splitlines()[-1] if raw.stdout.strip() else ""
    if not candidate.startswith(posixpath.join(directory or ".", "." + name + ".")):
        raise SwitchError(f"writing a candidate for {path}: the switch did not name it (printed {raw.stdout!r})")
    return candidate


def validate_command(template: str, candidate: str) -> str:
    if "%s" not in template:
        raise SwitchError(f"the check command must contain %s for the candidate file, got {template!r}")
    return template.replace("%s", _q(candidate))


@dataclass(frozen=True)
class Installed:
    backup: str | None


def install_file(run: Run, path: str, text: str, validate: str = "", backup: bool = True) -> Installed:
    """Write ``text`` as a candidate, check it with ``validate`` (``%s`` = the candidate), keep a backup of the
    live file, then rename the candidate over it (one step). Raises SwitchError, with the checker's own words,
    when any step fails; the candidate is removed and the live file stays as it was."""
    candidate = write_candidate(run, path, text)
    try:
        if validate:
            check = run(validate_command(validate, candidate))
            if check.rc != 0:
                raise SwitchError(f"the switch rejected the new {path} (rc={check.rc}), nothing was changed: "
                                  f"{(check.stderr.strip() or check.stdout.strip())[:2000]}")
        copy = None
        if backup:
            stamp = expect(run(f"if [ -e {_q(path)} ]; then b={_q(path)}.$(date +%Y-%m-%d@%H:%M:%S)~; "
                               f"cp -p -- {_q(path)} \"$b\" && printf '%s\\n' \"$b\"; fi"),
                           f"backing up {path}")
            copy = stamp.stdout.strip() or None
        expect(run(f"mv -f -- {_q(candidate)} {_q(path)}"), f"moving the new {path} in place")
        candidate = ""
        return Installed(backup=copy)
    finally:
        if candidate:
            run(f"rm -f -- {_q(candidate)}")


def command_exists(run: Run, name: str) -> bool:
    raw = run(f"command -v {_q(name)} >/dev/null 2>&1")
    if raw.rc not in (0, 1, 127):
        raise SwitchError(f"`{raw.command}` failed on the switch (rc={raw.rc}): {raw.output()}")
    return raw.rc == 0


def live_mismatches(run: Run, plan: dict[str, Any], require_link_up: bool) -> list[str]:
    """One reading of the live state, compared with the plan."""
    ip_link = parse_json(run("ip -d -j link show"), "reading the links")
    bridge_vlan = parse_json(run("bridge -j vlan show"), "reading the bridge VLANs")
    lo_addr = parse_json(run("ip -j addr show dev lo"), "reading lo's addresses")
    clag = None
    if plan.get("peerlink"):
        if not command_exists(run, "clagctl"):
            raise SwitchError("the plan has a CLAG peerlink but clagctl is not installed on this switch")
        raw = run("clagctl -j")
        clag = parse_json(raw, "reading the CLAG status") if raw.rc == 0 else None
    garbled = shape_problems(ip_link, bridge_vlan, lo_addr, clag)
    if garbled:
        raise SwitchError("the switch's live state could not be read: " + "; ".join(garbled))
    return compare(plan, ip_link, bridge_vlan, lo_addr, clag, require_link_up)
