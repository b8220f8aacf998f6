"""Whether a Debian/Ubuntu host already has the packages, services and files a role declares: one read.

A converged node should cost one remote call to prove it is converged, not one per package list, service and
file (each remote module call is a Python start plus the imports of ansible.module_utils.basic: 1.5-4 s inside a
TCG VM). The host_state action plugin (plugins/action/host_state.py, documented in library/host_state.py) reads
the host in one shell command (probe_script; framing module_utils/shell_probe.py) and these pure functions judge
what it read (state_from_probe); a
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

import json
from dataclasses import dataclass
from typing import Any

import ansible.module_utils.shell_probe as sp

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


# ---------------------------------------------------------------------------------------------- the probe
# stat -c '%F|%U|%G|%u|%g|%a' (GNU coreutils stat(1)): the kind as words, owner and group names ("UNKNOWN" where
# the id has none), the ids, the octal permission bits; shell_probe's `s` appends the SHA-1 of a regular file.
_KINDS = {"regular file": "file", "regular empty file": "file", "directory": "directory"}


def probe_script(packages: list[str], services: list[ServiceWant], files: list[FileWant], images: list[str],
                 timeout: int = 120) -> str:
    """One shell command reading, read-only, what the host has of each declared package, service, file and
    docker image."""
    probes = []
    if packages:
        probes.append(sp.tool("dpkg", ["dpkg-query", "-W", "-f", DPKG_FORMAT, *packages]))
    for i, svc in enumerate(services):
        probes += [sp.tool(f"enabled:{i}", ["systemctl", "is-enabled", svc.name]),
                   sp.tool(f"active:{i}", ["systemctl", "is-active", svc.name])]
    probes += [sp.stat(f"file:{i}", f.path, f.state == "file" and f.sha1 is not None) for i, f in enumerate(files)]
    if images:
        probes.append(sp.tool("docker", ["docker", "image", "inspect", *images]))
    return sp.script(probes, timeout)


def seen_from_stat(status: tuple[int, str, str] | None) -> FileSeen:
    """FileSeen from what shell_probe's `s` printed (None: nothing at the path). A stat that failed is a
    ProbeError: the path could not be read, so nothing can be judged."""
    if status is None:
        return FileSeen("absent")
    rc, out, err = status
    cells = out.strip().split("|")
    if rc != 0 or len(cells) not in (6, 7) or not cells[5].isdigit():
        raise sp.ProbeError(f"stat failed or printed {out.strip()[:120]!r} (rc {rc}): {err.strip()[:200]}")
    kind = _KINDS.get(cells[0], "other")
    return FileSeen(kind=kind, sha1=cells[6] if len(cells) == 7 and cells[6] else None,
                    owner=cells[3] if cells[1] == "UNKNOWN" else cells[1],
                    group=cells[4] if cells[2] == "UNKNOWN" else cells[2], mode=int(cells[5], 8))


def state_from_probe(text: str, packages: list[str], services: list[ServiceWant], files: list[FileWant],
                     images: list[str]) -> dict[str, Any]:
    """What host_state returns, from what probe_script printed: the packages missing, each service's and file's
    drift, the images docker inspected (or why they could not be read). dpkg-query failing (not rc 0 or 1) or an
    answer cut short is a ProbeError."""
    wanted = (["dpkg"] if packages else []) + [f"{w}:{i}" for i in range(len(services)) for w in ("enabled", "active")]
    wanted += [f"file:{i}" for i in range(len(files))] + (["docker"] if images else [])
    answers = sp.read(text, wanted)
    status: dict[str, str] = {}
    if packages:
        dpkg = sp.ran(answers, "dpkg")
        if dpkg is None:
            raise sp.ProbeError("dpkg-query is not installed on this host: not a Debian or Ubuntu system")
        if dpkg[0] not in (0, 1):
            raise sp.ProbeError(f"dpkg-query failed (rc {dpkg[0]}): {dpkg[2].strip()}")
        status = parse_dpkg_status(dpkg[1])
    missing = missing_packages(packages, status)
    drift_services: dict[str, list[str]] = {}
    for i, want in enumerate(services):
        answer = [sp.ran(answers, f"{w}:{i}") for w in ("enabled", "active")]
        words = [(a[1].strip() or a[2].strip()) if a else "systemctl is not installed" for a in answer]
        drift = service_drift(want, words[0], words[1])
        if drift:
            drift_services[want.name] = drift
    drift_files: dict[str, list[str]] = {}
    for i, want_file in enumerate(files):
        drift = file_drift(want_file, seen_from_stat(sp.ran(answers, f"file:{i}")))
        if drift:
            drift_files[want_file.path] = drift
    found: list[dict] | None = []
    unread = ""
    if images:
        docker = sp.ran(answers, "docker")
        found, unread = (None, "the docker CLI is not installed") if docker is None else parse_image_inspect(*docker)
    return {"changed": False, "packages_missing": missing, "services_drift": drift_services,
            "files_drift": drift_files, "docker_images": found, "docker_images_unread": unread,
            "in_sync": not (missing or drift_services or drift_files)}
