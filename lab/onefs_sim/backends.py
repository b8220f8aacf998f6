"""Where the simulator's state lands.

* :class:`MemoryBackend` (tests): directories and interfaces in memory; exports and quotas only in the model.
* :class:`KnfsdBackend` (the lab's powerscale01 VM): directories are real directories under ``--ifs``
  (owner, group, mode applied with chown/chmod), exports are rendered to ``/etc/exports.d/onefs-sim.exports``
  and applied with ``exportfs -ra``, directory quotas are XFS project quotas on the ``--ifs`` mount
  (``/etc/projects`` + ``/etc/projid``, ``xfs_quota -x``), so a hard threshold really stops writes.

Mapping of OneFS export fields to exportfs options (see :func:`render_exports`):

=====================  ==============================================================================
OneFS                  exportfs
=====================  ==============================================================================
clients                one entry per client, ``rw`` (``ro`` when read_only); none listed = ``*``
read_write_clients     ``rw`` even on a read_only export
read_only_clients      ``ro``
root_clients           ``no_root_squash`` for that client (OneFS: root is not mapped for them)
map_root enabled, user ``root_squash,anonuid=<uid of user>,anongid=<gid>``; user root = ``no_root_squash``
map_root disabled      ``no_root_squash``
map_non_root enabled   ``all_squash,anonuid=<uid>,anongid=<gid>`` (root handled by map_root as above)
security_flavors       ``sec=sys|krb5|krb5i|krb5p`` (unix = sys)
all_dirs               knfsd always allows mounting subdirectories; recorded, no option needed
=====================  ==============================================================================
Always added: ``sync`` (OneFS commits writes synchronously by default) and ``no_subtree_check``.

Quotas: the hard and soft thresholds become the project's ``bhard``/``bsoft``; the advisory threshold only
notifies on OneFS, so it is kept in the API and not enforced. XFS has one soft-limit grace period per file
system and quota type, so ``soft_grace`` of the last quota applied sets it for all. A full project quota
makes XFS answer ENOSPC ("No space left on device"), where OneFS answers EDQUOT; both refuse the write.
"""

from __future__ import annotations

import ipaddress
import json
import os
import pwd
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from .model import PapiError, bad_request, not_found

EXPORTS_FILE = "/etc/exports.d/onefs-sim.exports"
PROJECTS_FILE = "/etc/projects"
PROJID_FILE = "/etc/projid"
PROJECT_PREFIX = "onefs_q"


def internal_error(message: str) -> PapiError:
    return PapiError(500, "AEC_SYSTEM_INTERNAL_ERROR", message)


def _persona(mapping: dict[str, Any] | None) -> str | None:
    if not mapping:
        return None
    user = (mapping.get("user") or {}).get("id", "")
    return user.split(":", 1)[1] if ":" in user else user or None


def export_options(export: dict[str, Any], client: str, ids: Any) -> str:
    """exportfs options for one client of one OneFS export. ``ids(user) -> (uid, gid)``."""
    read_only = export.get("read_only", False)
    if client in export.get("read_write_clients", []):
        read_only = False
    if client in export.get("read_only_clients", []):
        read_only = True
    opts = ["ro" if read_only else "rw", "sync", "no_subtree_check"]
    map_root = export.get("map_root") or {}
    root_user = _persona(map_root) if map_root.get("enabled") else None
    if client in export.get("root_clients", []) or not map_root.get("enabled") or root_user in ("root", "UID:0"):
        opts.append("no_root_squash")
    else:
        uid, gid = ids(root_user or "nobody")
        opts += ["root_squash", f"anonuid={uid}", f"anongid={gid}"]
    map_non_root = export.get("map_non_root") or {}
    if map_non_root.get("enabled"):
        uid, gid = ids(_persona(map_non_root) or "nobody")
        opts = [o for o in opts if not o.startswith(("anonuid=", "anongid="))]
        opts += ["all_squash", f"anonuid={uid}", f"anongid={gid}"]
    flavors = ["sys" if f == "unix" else f for f in export.get("security_flavors") or ["unix"]]
    opts.append("sec=" + ":".join(flavors))
    return ",".join(opts)


def render_exports(exports: dict[int, dict[str, Any]], ids: Any) -> str:
    """The /etc/exports.d file for every OneFS export (one line per path)."""
    lines = ["# Written by the OneFS API simulator (lab/onefs_sim). Do not edit: change exports through the API."]
    for eid in sorted(exports):
        export = exports[eid]
        clients: list[str] = []
        for name in ("clients", "read_write_clients", "read_only_clients", "root_clients"):
            for c in export.get(name) or []:
                if c not in clients:
                    clients.append(c)
        entries = [f"{_exportfs_client(c)}({export_options(export, c, ids)})" for c in clients] or [
            f"*({export_options(export, '*', ids)})"
        ]
        for path in export["paths"]:
            lines.append(f"# export id {eid} zone {export['zone']}: {export.get('description', '')}".rstrip())
            lines.append(f"{_quote_path(path)} " + " ".join(entries))
    return "\n".join(lines) + "\n"


def _exportfs_client(client: str) -> str:
    try:
        net = ipaddress.ip_network(client, strict=False)
        return str(net) if "/" in client else client
    except ValueError:
        return client


def _quote_path(path: str) -> str:
    return '"' + path + '"' if re.search(r"\s", path) else path


def system_ids(user: str) -> tuple[int, int]:
    try:
        pw = pwd.getpwnam(user)
    except KeyError:
        if user.upper().startswith("UID:"):
            uid = int(user[4:])
            return uid, uid
        raise bad_request(f"User '{user}' cannot be resolved on the cluster") from None
    return pw.pw_uid, pw.pw_gid


class MemoryBackend:
    """Directories and interfaces in memory (tests)."""

    kind = "memory"

    def __init__(self, interfaces: list[dict[str, Any]] | None = None) -> None:
        self.dirs: dict[str, dict[str, Any]] = {"/ifs": {"mode": "0777", "uid": 0, "gid": 0}}
        self._interfaces = interfaces or [
            {"lnn": 1, "name": "40gige-1", "ip_addrs": ["198.51.100.21"], "status": "up", "mtu": 9000},
        ]

    # state persistence of the in-memory tree (the knfsd tree is the file system itself)
    def to_json(self) -> dict[str, Any]:
        return {"dirs": self.dirs}

    def load_json(self, data: dict[str, Any]) -> None:
        self.dirs.update(data.get("dirs", {}))

    def path_exists(self, path: str) -> bool:
        return path.rstrip("/") in self.dirs

    def dir_info(self, path: str) -> dict[str, Any] | None:
        return self.dirs.get(path.rstrip("/"))

    def make_dir(self, path: str, mode: str, recursive: bool, uid: int, gid: int) -> None:
        path = path.rstrip("/")
        parent = path.rsplit("/", 1)[0]
        if parent not in self.dirs:
            if not recursive:
                raise not_found(f"Parent directory '{parent}' does not exist (use ?recursive=true)")
            self.make_dir(parent, mode, True, uid, gid)
        self.dirs.setdefault(path, {"mode": mode, "uid": uid, "gid": gid})

    def set_acl(self, path: str, uid: int | None, gid: int | None, mode: str | None) -> None:
        info = self.dirs[path.rstrip("/")]
        if uid is not None:
            info["uid"] = uid
        if gid is not None:
            info["gid"] = gid
        if mode:
            info["mode"] = mode

    def apply_exports(self, exports: dict[int, dict[str, Any]]) -> None:
        render_exports(exports, lambda user: (65534, 65534))  # same rendering as the VM: catches bad data early

    def apply_quota(self, quota: dict[str, Any]) -> None:
        return None

    def remove_quota(self, quota: dict[str, Any]) -> None:
        return None

    def quota_usage(self, quota: dict[str, Any]) -> dict[str, int | None] | None:
        return None

    def interfaces(self) -> list[dict[str, Any]]:
        return [dict(i) for i in self._interfaces]


class KnfsdBackend:
    """Real directories, knfsd exports and XFS project quotas (inside the lab's powerscale01 VM)."""

    kind = "knfsd"

    def __init__(self, ifs_root: str, exports_file: str = EXPORTS_FILE, projects_file: str = PROJECTS_FILE,
                 projid_file: str = PROJID_FILE, run: Any = None) -> None:
        self.ifs_root = Path(ifs_root)
        self.exports_file = Path(exports_file)
        self.projects_file = Path(projects_file)
        self.projid_file = Path(projid_file)
        self._run = run or self._run_cmd

    @staticmethod
    def _run_cmd(argv: list[str]) -> str:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            raise internal_error(f"{' '.join(argv)} failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()}")
        return proc.stdout

    def to_json(self) -> dict[str, Any]:
        return {}

    def load_json(self, data: dict[str, Any]) -> None:
        return None

    def fs_path(self, path: str) -> Path:
        rel = path.rstrip("/")[len("/ifs"):].lstrip("/")
        full = (self.ifs_root / rel).resolve()
        if full != self.ifs_root.resolve() and self.ifs_root.resolve() not in full.parents:
            raise bad_request(f"Path '{path}' escapes /ifs")
        return full

    def path_exists(self, path: str) -> bool:
        return self.fs_path(path).is_dir()

    def dir_info(self, path: str) -> dict[str, Any] | None:
        p = self.fs_path(path)
        if not p.is_dir():
            return None
        st = p.stat()
        return {"mode": f"{st.st_mode & 0o7777:04o}", "uid": st.st_uid, "gid": st.st_gid}

    def make_dir(self, path: str, mode: str, recursive: bool, uid: int, gid: int) -> None:
        """Numeric ids: the simulator resolves OneFS personas (wheel = GID 0), not the VM's /etc/group."""
        p = self.fs_path(path)
        if not p.parent.is_dir() and not recursive:
            raise not_found(f"Parent directory of '{path}' does not exist (use ?recursive=true)")
        missing = [q for q in [p, *p.parents] if not q.exists() and self.ifs_root.resolve() in q.parents]
        p.mkdir(parents=recursive, exist_ok=True)
        for q in missing:
            os.chown(q, uid, gid)
        os.chmod(p, int(mode, 8))

    def set_acl(self, path: str, uid: int | None, gid: int | None, mode: str | None) -> None:
        p = self.fs_path(path)
        os.chown(p, -1 if uid is None else uid, -1 if gid is None else gid)
        if mode:
            os.chmod(p, int(mode, 8))

    def apply_exports(self, exports: dict[int, dict[str, Any]]) -> None:
        text = render_exports(exports, system_ids)
        self.exports_file.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(self.exports_file, text)
        self._run(["exportfs", "-ra"])

    # ---- XFS project quotas ----
    def _project_name(self, quota: dict[str, Any]) -> str:
        return f"{PROJECT_PREFIX}{quota['_project_id']}"

    def _rewrite_project_files(self, add: dict[str, Any] | None, remove: dict[str, Any] | None) -> None:
        projects = self.projects_file.read_text().splitlines() if self.projects_file.exists() else []
        projid = self.projid_file.read_text().splitlines() if self.projid_file.exists() else []
        for q in (add, remove):
            if q is None:
                continue
            pid = str(q["_project_id"])
            projects = [ln for ln in projects if ln.split(":", 1)[0] != pid]
            projid = [ln for ln in projid if ln.split(":", 1)[0] != self._project_name(q)]
        if add is not None:
            projects.append(f"{add['_project_id']}:{self.fs_path(add['path'])}")
            projid.append(f"{self._project_name(add)}:{add['_project_id']}")
        _atomic_write(self.projects_file, "\n".join(projects) + "\n" if projects else "")
        _atomic_write(self.projid_file, "\n".join(projid) + "\n" if projid else "")

    def _xfs(self, command: str) -> str:
        return self._run(["xfs_quota", "-x", "-c", command, str(self.ifs_root)])

    def apply_quota(self, quota: dict[str, Any]) -> None:
        """Create or update the XFS project quota that enforces a OneFS directory quota."""
        self._rewrite_project_files(quota, None)
        name = self._project_name(quota)
        self._xfs(f"project -s {name}")
        t = quota["thresholds"]
        # XFS has a soft and a hard block limit; OneFS's advisory threshold only notifies, so it is not enforced.
        self._xfs(f"limit -p bsoft={t.get('soft') or 0} bhard={t.get('hard') or 0} {name}")
        if t.get("soft_grace"):
            self._xfs(f"timer -p -b {int(t['soft_grace'])}")

    def remove_quota(self, quota: dict[str, Any]) -> None:
        name = self._project_name(quota)
        self._xfs(f"limit -p bsoft=0 bhard=0 {name}")
        self._xfs(f"project -C {name}")
        self._rewrite_project_files(None, quota)

    def quota_usage(self, quota: dict[str, Any]) -> dict[str, int | None] | None:
        """Usage from ``xfs_quota report -p -b -N`` (1 KiB blocks): '<project name> <used> <soft> <hard> ...'."""
        name = self._project_name(quota)
        for line in self._xfs("report -p -b -N").splitlines():
            cols = line.split()
            if len(cols) >= 2 and cols[0] in (name, f"#{quota['_project_id']}") and cols[1].isdigit():
                used = int(cols[1]) * 1024
                return {"fslogical": used, "fsphysical": used, "inodes": 0, "logical": used, "physical": used,
                        "applogical": used, "shadow_logical": None}
        return None

    def interfaces(self) -> list[dict[str, Any]]:
        data = json.loads(self._run(["ip", "-j", "addr", "show"]))
        out = []
        for link in data:
            if link.get("ifname") in ("lo", "mgmt0"):
                continue
            addrs = [a["local"] for a in link.get("addr_info", []) if a.get("family") == "inet"]
            out.append({"lnn": 1, "name": link["ifname"], "ip_addrs": addrs,
                        "status": "up" if "UP" in link.get("flags", []) else "down", "mtu": link.get("mtu")})
        return out


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
