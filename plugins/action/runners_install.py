"""Action plugin runners_install: the run's runner scripts onto a node, in one shell command.

Documentation: library/runners_install.py. The control node reads the run's runners.tar (playbooks/validate.yml's
first play packed it) and sends it on the command's stdin; the node makes the runners' directory and unpacks it
there. Where a file module call, a transfer and an unarchive module call took two Python starts in the node
(about 12 s of every validation on the lab's TCG VMs), this starts none.
"""

from __future__ import annotations

import io
import shlex
import tarfile
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase


def archive_names(data: bytes, path: Path) -> list[str]:
    """The names in the runners' archive (data, read from path); refused (ValueError) when one is not a plain file at
    the top level."""
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        members = tar.getmembers()
    bad = [m.name for m in members if not m.isfile() or "/" in m.name or m.name.startswith(".")]
    if bad or not members:
        raise ValueError(f"{path}: expected only plain top-level files, found {bad or 'nothing'}")
    return sorted(m.name for m in members)


def install_command(dest: str) -> str:
    """Make the directory, unpack stdin into it (the node's user owns the files), and leave every file 0755."""
    d = shlex.quote(dest)
    return f"umask 022 && mkdir -p {d} && tar -xf - --no-same-owner -C {d} && chmod -R 0755 {d}"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("src", "dest"))

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        host = (task_vars or {}).get("inventory_hostname", "?")
        missing = [k for k in ("src", "dest") if not args.get(k)]
        if missing:
            return {**result, "failed": True, "msg": f"runners_install needs {', '.join(missing)}"}
        src, dest = Path(str(args["src"])), str(args["dest"])
        try:
            data = src.read_bytes()  # read once: the bytes checked are the bytes sent
            names = archive_names(data, src)
        except (OSError, tarfile.TarError, ValueError) as exc:
            return {**result, "failed": True, "msg": f"the runners' archive cannot be sent to {host}: {exc}"}
        cmd = install_command(dest)
        res = self._low_level_execute_command(cmd, sudoable=True, in_data=data)
        if res.get("rc") != 0:
            return {**result, "failed": True, "rc": res.get("rc"), "cmd": cmd,
                    "msg": f"{host}: installing the runners into {dest} failed (rc {res.get('rc')}): "
                           f"{(res.get('stderr') or res.get('stdout') or '').strip()[-1500:]}"}
        # The run's own tooling in its own directory, not cluster state (README, Validation: what 'changed' counts)
        return {**result, "changed": False, "dest": dest, "files": names, "bytes": len(data)}
