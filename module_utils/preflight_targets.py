"""Preflight target checks: parse what a target reports about itself and judge it against the inventory.

The probe (roles/preflight/tasks/targets.yml) runs through `raw` (no Python needed on the target, since Python is one of the things checked) and
prints three sections: `@@kernel <uname -r>`, `@@os` + /etc/os-release, `@@python` + the interpreter version.
Pure functions; the rows use the same Problem type as the inventory rules.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ansible.module_utils.inventory_problem import ERROR, Problem

PROBE_MARKERS = ("@@kernel", "@@os", "@@python")


@dataclass(frozen=True)
class Probe:
    """What one target said about itself. Empty strings mean "not reported"."""

    kernel: str = ""
    os_id: str = ""
    os_name: str = ""
    os_version: str = ""
    python: str = ""
    complete: bool = False


def parse_probe(text: str) -> Probe:
    """Parse the probe's stdout; `complete` is false when a section marker is missing (truncated output)."""
    sections: dict[str, list[str]] = {}
    current = None
    for line in text.splitlines():
        line = line.strip()
        head = line.split(" ", 1)[0]
        if head in PROBE_MARKERS:
            current = head
            sections[current] = [line[len(head):].strip()] if line[len(head):].strip() else []
        elif current is not None and line:
            sections[current].append(line)
    osrel: dict[str, str] = {}
    for line in sections.get("@@os", []):
        key, sep, value = line.partition("=")
        if sep:
            osrel[key.strip()] = value.strip().strip('"').strip("'")
    python = next((p for p in sections.get("@@python", []) if re.fullmatch(r"\d+\.\d+(\.\d+)?", p)), "")
    return Probe(
        kernel=(sections.get("@@kernel") or [""])[0],
        os_id=osrel.get("ID", ""),
        os_name=osrel.get("NAME", ""),
        os_version=osrel.get("VERSION_ID", ""),
        python=python,
        complete=all(m in sections for m in PROBE_MARKERS),
    )


def leading_version(text: str) -> tuple[int, ...] | None:
    """(5, 15, 0) from "5.15.0-91-generic"; None when the text does not start with a version."""
    match = re.match(r"(\d+(?:\.\d+)*)", text or "")
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def os_matches(probe: Probe, supported: Any) -> bool:
    """The target's distribution and VERSION_ID match an entry; versions match by dotted prefix ("4" = 4.x)."""
    for entry in supported if isinstance(supported, list) else []:
        if not isinstance(entry, Mapping):
            continue
        dist = str(entry.get("distribution", "")).lower()
        if dist not in (probe.os_id.lower(), probe.os_name.lower()) and not probe.os_name.lower().startswith(dist):
            continue
        for version in entry.get("versions") or []:
            want, have = str(version).split("."), probe.os_version.split(".")
            if have[: len(want)] == want:
                return True
    return False


@dataclass(frozen=True)
class Requirement:
    """What one target must run, and the variables that say so (for the table)."""

    supported_os: list[Any] = field(default_factory=list)
    os_var: str = ""
    min_python: str = ""
    python_var: str = ""
    min_kernel: str = ""
    kernel_var: str = ""


UNREACHABLE_FIX = ("check ansible_host, ansible_port, ansible_user and the SSH key; or run with "
                   "-e preflight_offline=true to check the inventory only")


# Groups whose role runs no Ansible module on the target, so the target needs no Python for it: the sn3700v
# role's files method sends plain shell commands (Cumulus Linux 4.0-4.4 and 5.0-5.8 ship Python 3.7.3, which
# ansible-core 2.19 refuses) and its nvue method talks to the REST API from the control node.
AGENTLESS_GROUPS = ("sn3700v",)


def min_python_for(group: str, configured: str) -> str:
    """The Python a target of this group must have for the project's roles ("" = none)."""
    return "" if group in AGENTLESS_GROUPS else configured


def check_target(host: str, result: Mapping[str, Any], req: Requirement) -> list[Problem]:
    """Rows for one target from its registered `raw` result (fail closed: no data is a failed check)."""
    if result.get("unreachable"):
        return [Problem(host, "ansible_host", result.get("ansible_host", ""),
                        f"unreachable: {str(result.get('msg', '')).strip()[:120]}", UNREACHABLE_FIX)]
    if result.get("failed") or result.get("rc", 0) != 0:
        return [Problem(host, "ansible_host", result.get("ansible_host", ""),
                        f"the probe failed (rc {result.get('rc')}): {str(result.get('msg', ''))[:120]}",
                        UNREACHABLE_FIX)]
    probe = parse_probe(str(result.get("stdout", "")))
    out: list[Problem] = []
    if not probe.complete:
        out.append(Problem(host, "ansible_host", result.get("ansible_host", ""),
                           "the probe's output is incomplete (no kernel/OS/Python section)",
                           "run `uname -r; cat /etc/os-release` on the host by hand and fix its shell"))
        return out
    shown_os = f"{probe.os_name or probe.os_id or '?'} {probe.os_version}".strip()
    if not req.supported_os:
        out.append(Problem(host, req.os_var, "(not set)", "no supported OS is declared for this host's group",
                           f"declare the supported releases in {req.os_var}"))
    elif not os_matches(probe, req.supported_os):
        out.append(Problem(host, req.os_var, shown_os, "the host runs an OS release this inventory does not support",
                           f"install a supported release, or add it to {req.os_var} after qualifying it"))
    if req.min_kernel:
        have, want = leading_version(probe.kernel), leading_version(req.min_kernel)
        if have is None:
            out.append(Problem(host, req.kernel_var, probe.kernel or "(none)", "the kernel version was not reported",
                               "check `uname -r` on the host"))
        elif want is not None and have < want:
            out.append(Problem(host, req.kernel_var, probe.kernel, f"kernel is older than {req.min_kernel}",
                               f"upgrade the kernel to >= {req.min_kernel} (nconnect needs 5.3)"))
    if req.min_python:
        have, want = leading_version(probe.python), leading_version(req.min_python)
        if have is None:
            out.append(Problem(host, req.python_var, "(none)", "no Python 3 interpreter found on the host",
                               "install python3 (Ansible runs its modules with it)"))
        elif want is not None and have < want:
            out.append(Problem(host, req.python_var, probe.python, f"Python is older than {req.min_python}",
                               f"install Python >= {req.min_python} (ansible-core 2.19 needs 3.8 on targets)"))
    return out


def describe(result: Mapping[str, Any]) -> str:
    """What a target reported, for the line under the table ("unreachable" when it said nothing)."""
    if result.get("unreachable") or result.get("failed"):
        return "no answer"
    probe = parse_probe(str(result.get("stdout", "")))
    return (f"{probe.os_name or probe.os_id or '?'} {probe.os_version}, kernel {probe.kernel or '?'}, "
            f"Python {probe.python or '?'}")


def count_errors(rows: list[Mapping[str, Any]]) -> int:
    return sum(1 for r in rows if r.get("severity") == ERROR)
