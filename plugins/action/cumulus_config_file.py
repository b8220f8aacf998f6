"""Action plugin cumulus_config_file: the role's part of a switch configuration file, agentless.

Documentation: library/cumulus_config_file.py. The file is read with `cat`, edited here on the control node
(module_utils/cumulus_switch.py: a marked block, or KEY=VALUE lines), and when it changes a candidate is
written next to it, checked by the switch's own parser and renamed over it in one step.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.plugins.action import ActionBase

_UTILS = str(Path(__file__).resolve().parents[2] / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.cumulus_switch import (  # noqa: E402
    FRR_MARKER,
    SwitchError,
    action_runner,
    install_file,
    read_file,
    replace_block,
    set_lines,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("path", "block", "marker", "lines", "validate", "backup"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        run = action_runner(self)
        host = (task_vars or {}).get("inventory_hostname", "?")
        path = str(args.get("path") or "")
        block, lines = args.get("block"), args.get("lines")
        if not path or (block is None) == (lines is None):
            return {**result, "failed": True,
                    "msg": "cumulus_config_file: give path and exactly one of block (a marked block) or lines "
                    "(KEY=VALUE settings)"}
        if lines is not None and (not isinstance(lines, dict)
                                  or any("=" in str(k) or "\n" in f"{k}{v}" for k, v in lines.items())):
            return {**result, "failed": True, "msg": f"cumulus_config_file: lines must map keys to values, got {lines!r}"}
        marker = str(args.get("marker") or FRR_MARKER)
        if "{mark}" not in marker:
            return {**result, "failed": True, "msg": f"cumulus_config_file: marker must contain {{mark}}, got {marker!r}"}
        try:
            current = read_file(run, path)
            if current is None:
                return {**result, "failed": True,
                        "msg": f"{host}: {path} does not exist on the switch, nothing was changed. Fix: install the "
                        "package that owns it, or point the role's variable for this file at the right path."}
            if block is not None:
                new = replace_block(current, str(block), marker)
            else:
                new = set_lines(current, {str(k): str(v) for k, v in lines.items()})
            changed = new != current
            result["changed"] = changed
            if self._task.diff:
                result["diff"] = {"before": current, "after": new, "before_header": path, "after_header": path}
            if changed and not self._task.check_mode:
                installed = install_file(run, path, new, str(args.get("validate") or ""),
                                         bool(args.get("backup", True)))
                if installed.backup:
                    result["backup_file"] = installed.backup
        except SwitchError as exc:
            return {**result, "failed": True, "msg": f"{host}: {exc}"}
        return result
