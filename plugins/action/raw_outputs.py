"""Action plugin raw_outputs: a stage's raw outputs from one node into the run directory, in one shell command.

Documentation: library/raw_outputs.py. The node packs the stage's directory (validation/runners/common.py
pack-base64, the runners' own copy there) and prints the archive as base64; this plugin, on the control node,
decodes it and unpacks it under the run directory's raw/ (common.unpack_tree: regular files only, nothing outside
raw/). One command on the node, where a pack module call, a fetch (a stat module call and a transfer) and a local
unpack took three Python starts, two of them in the node (a module call costs 1.5-2 s in a TCG VM).
"""

from __future__ import annotations

import base64
import binascii
import importlib.util
import shlex
from pathlib import Path
from typing import Any

from ansible.plugins.action import ActionBase

_ROOT = Path(__file__).resolve().parents[2]
_COMMON = _ROOT / "validation" / "runners" / "common.py"


def _unpack_tree() -> Any:
    """common.unpack_tree, loaded from the file the nodes run (the runners are plain scripts, not a package)."""
    spec = importlib.util.spec_from_file_location("validation_runners_common", _COMMON)
    if spec is None or spec.loader is None:
        raise AssertionError(f"cannot load {_COMMON}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.unpack_tree


def pack_command(python: str, runners: str, src: str, arcroot: str, reroute: list[str], remove: str = "") -> str:
    """The shell command the node runs: its common.py prints the stage's archive as base64 (and, given remove, removes
    that 'validation' directory once packed: the stage's cleanup without a second command)."""
    argv = [python, f"{runners}/common.py", "pack-base64", src, arcroot, *reroute,
            *([f"--remove={remove}"] if remove else [])]
    return " ".join(shlex.quote(a) for a in argv)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("src", "runners", "python", "arcroot", "reroute", "dest", "remove"))

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        missing = [k for k in ("src", "runners", "python", "arcroot", "dest") if not args.get(k)]
        if missing:
            return {**result, "failed": True, "msg": f"raw_outputs needs {', '.join(missing)}"}
        reroute = [str(r) for r in args.get("reroute") or []]
        host = (task_vars or {}).get("inventory_hostname", "?")
        cmd = pack_command(str(args["python"]), str(args["runners"]), str(args["src"]), str(args["arcroot"]), reroute,
                           str(args.get("remove") or ""))
        res = self._low_level_execute_command(cmd, sudoable=True)
        if res.get("rc") != 0:
            return {**result, "failed": True, "rc": res.get("rc"), "cmd": cmd,
                    "msg": f"{host}: packing {args['src']} failed (rc {res.get('rc')}): "
                           f"{(res.get('stderr') or res.get('stdout') or '').strip()[-1500:]}"}
        try:
            data = base64.b64decode("".join((res.get("stdout") or "").split()), validate=True)
        except (binascii.Error, ValueError) as exc:
            return {**result, "failed": True, "cmd": cmd,
                    "msg": f"{host}: the archive of {args['src']} did not arrive as base64 ({exc})"}
        dest = Path(str(args["dest"]))
        dest.mkdir(parents=True, exist_ok=True)
        incoming = dest / f".incoming-{args['arcroot']}-{host}.tar"
        incoming.write_bytes(data)
        try:
            files = _unpack_tree()(str(incoming), str(dest))
        except SystemExit as exc:  # unpack_tree refuses an archive that writes outside dest, or a link
            incoming.unlink(missing_ok=True)
            return {**result, "failed": True, "msg": f"{host}: {exc}"}
        return {**result, "changed": False, "files": files, "bytes": len(data), "dest": str(dest)}
