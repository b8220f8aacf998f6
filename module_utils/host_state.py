"""Whether a Debian/Ubuntu host already has the packages, services and files a role declares: one read.

A converged node should cost one remote module call to prove it is converged, not one per package list,
service and file (each remote call is a Python start plus the imports of ansible.module_utils.basic: 1.5-2 s
inside a TCG VM). library/host_state.py reads the host once and these pure functions judge what it read; a
role then runs its install tasks only for what differs. Each judgement answers "in sync" only when the
module the role would otherwise run would report no change, and "differs" in every doubtful case (an unknown
status, a version pin, a unit state other than enabled/active), so the real module decides those.

The formats read:
- ``dpkg-query -W -f '${Package}\\t${db:Status-Abbrev}\\n' NAME...``: one line per installed or known
  package; ``db:Status-Abbrev`` is three characters (desired action, package status, error flag), e.g.
  ``ii `` (dpkg-query(1), "db:Status-Abbrev"). A name dpkg does not know prints nothing on stdout.
- ``systemctl is-enabled UNIT`` and ``systemctl is-active UNIT``: one word (systemctl(1)).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

DPKG_FORMAT = "${Package}\\t${db:Status-Abbrev}\\n"
_PIN_CHARS = set("=<>*?:")


@dataclass(frozen=True)
class ServiceWant:
    name: str
    enabled: bool = True
    started: bool = True


@dataclass(frozen=True)
class FileWant:
    """A file (``state: file``, content by SHA-1) or a directory, with owner, group and octal mode."""

    path: str
    state: str = "file"
    sha1: str | None = None
    owner: str | None = None
    group: str | None = None
    mode: str | None = None


@dataclass(frozen=True)
class FileSeen:
    """What the host has at a path (``kind`` is 'absent', 'file', 'directory' or 'other')."""

    kind: str
    sha1: str | None = None
    owner: str | None = None
    group: str | None = None
    mode: int | None = None


def parse_dpkg_status(text: str) -> dict[str, str]:
    """Package name -> its three-character ``db:Status-Abbrev`` from dpkg-query's output."""
    status: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, abbrev = line.partition("\t")
        if sep and name:
            status[name.strip()] = abbrev
    return status


def package_installed(abbrev: str | None) -> bool:
    """dpkg status 'installed' (second character i) with no error flag (third character blank)."""
    if not abbrev or len(abbrev) < 2:
        return False
    return abbrev[1] == "i" and (len(abbrev) < 3 or abbrev[2] == " ")


def missing_packages(wanted: list[str], status: dict[str, str]) -> list[str]:
    """The names apt would have to install. A name with a version pin or a pattern counts as missing, so
    the apt module judges it."""
    return [name for name in wanted
            if set(name) & _PIN_CHARS or not package_installed(status.get(name))]


def service_drift(want: ServiceWant, is_enabled: str, is_active: str) -> list[str]:
    """Why the service module would change this unit (empty when it would not)."""
    drift = []
    if want.enabled and is_enabled.strip() != "enabled":
        drift.append(f"{want.name} is-enabled: {is_enabled.strip() or 'no answer'}, want enabled")
    if want.started and is_active.strip() != "active":
        drift.append(f"{want.name} is-active: {is_active.strip() or 'no answer'}, want active")
    return drift


def file_drift(want: FileWant, seen: FileSeen) -> list[str]:
    """Why the file/copy module would change this path (empty when it would not)."""
    if seen.kind != want.state:
        return [f"{want.path} is {seen.kind}, want {want.state}"]
    drift = []
    if want.state == "file" and want.sha1 is not None and seen.sha1 != want.sha1.lower():
        drift.append(f"{want.path} content differs (sha1 {seen.sha1}, want {want.sha1.lower()})")
    if want.owner is not None and seen.owner != want.owner:
        drift.append(f"{want.path} owner {seen.owner}, want {want.owner}")
    if want.group is not None and seen.group != want.group:
        drift.append(f"{want.path} group {seen.group}, want {want.group}")
    if want.mode is not None:
        try:
            wanted_mode = int(str(want.mode), 8)
        except ValueError:
            return [*drift, f"{want.path} mode {want.mode!r} is not octal"]
        if seen.mode != wanted_mode:
            shown = "none" if seen.mode is None else f"{seen.mode:04o}"
            drift.append(f"{want.path} mode {shown}, want {wanted_mode:04o}")
    return drift


def sha1_of(path: str) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _name(lookup, ident: int) -> str:
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def see_file(path: str, want_sha1: bool) -> FileSeen:
    """Stat a path without following a final symlink (copy and file replace or refuse a link)."""
    import grp
    import pwd
    import stat

    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return FileSeen("absent")
    if stat.S_ISREG(st.st_mode):
        kind = "file"
    elif stat.S_ISDIR(st.st_mode):
        kind = "directory"
    else:
        kind = "other"
    return FileSeen(kind=kind, sha1=sha1_of(path) if kind == "file" and want_sha1 else None,
                    owner=_name(pwd.getpwuid, st.st_uid), group=_name(grp.getgrgid, st.st_gid),
                    mode=stat.S_IMODE(st.st_mode))


NO_SUCH_IMAGE = "No such image:"


def parse_image_inspect(rc: int, out: str, err: str) -> tuple[list[dict] | None, str]:
    """The images ``docker image inspect NAME...`` found, as the Engine API's inspect objects (what
    community.docker.docker_image_info returns as ``images``), or None and why they could not be read.

    The CLI prints a JSON array of the images it found and, for each name it did not, a line on stderr
    ("Error: No such image: X" up to Docker 20.10, "Error response from daemon: No such image: X:latest" since),
    and exits 1 (tests/fixtures/docker/real). Any other error (no daemon, no permission) is not an answer."""
    unexplained = [line for line in err.splitlines() if line.strip() and NO_SUCH_IMAGE not in line]
    if rc not in (0, 1) or (rc == 1 and (unexplained or not err.strip())):
        return None, (err.strip() or out.strip() or f"exit status {rc}")[:400]
    try:
        found = json.loads(out or "[]")
    except ValueError as exc:
        return None, f"docker image inspect printed no JSON array ({exc})"
    if not isinstance(found, list) or not all(isinstance(i, dict) for i in found):
        return None, "docker image inspect printed no JSON array of objects"
    return found, ""


def read_dpkg_status(run_command, names: list[str], fail) -> dict[str, str]:
    """dpkg-query's status of each name (parse_dpkg_status), through a module's run_command; ``fail(msg)`` ends
    the module when dpkg-query itself failed. rc 1 only means some name is unknown (stderr "no packages found
    matching"): those are absent from the result, so they count as missing."""
    if not names:
        return {}
    rc, out, err = run_command(["dpkg-query", "-W", "-f", DPKG_FORMAT, *names])
    if rc not in (0, 1):
        fail(f"dpkg-query failed (rc {rc}): {err.strip()}")
    return parse_dpkg_status(out)
