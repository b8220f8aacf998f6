"""Action plugin cumulus_interfaces: the storage-fabric region of /etc/network/interfaces, agentless.

Documentation: library/cumulus_interfaces.py. Every command on the switch is a plain shell command (as
ansible.builtin.raw runs them); reading, merging, checking and the diff happen here, on the control node, with
module_utils/cumulus_ifupdown.py; the remote steps are module_utils/cumulus_switch.py's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.plugins.action import ActionBase

_UTILS = str(Path(__file__).resolve().parents[2] / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.cumulus_ifupdown import (  # noqa: E402
    check,
    foreign_definitions,
    merge,
    sourced_patterns,
    unknown_options,
)
from ansible.module_utils.cumulus_switch import (  # noqa: E402
    SwitchError,
    action_runner,
    expand_sources,
    install_file,
    read_file,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("path", "stanzas", "owned", "validate", "backup"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        run = action_runner(self)
        path = str(args.get("path") or "/etc/network/interfaces")
        stanzas = args.get("stanzas")
        if not isinstance(stanzas, str) or not stanzas.strip():
            return {**result, "failed": True, "msg": "cumulus_interfaces: stanzas (the rendered stanzas) is required"}
        owned = sorted({str(n) for n in args.get("owned") or []})
        validate = str(args.get("validate", "ifup -a -s -i %s") or "")
        backup = bool(args.get("backup", True))
        try:
            current = read_file(run, path) or ""
            merged = merge(current, stanzas, owned)
            conflicts = []
            for included in expand_sources(run, path, sourced_patterns(merged.text)):
                if included == path:
                    continue
                for name in foreign_definitions(read_file(run, included) or "", owned):
                    conflicts.append(f"{included} defines iface {name}")
            if conflicts:
                return {**result, "failed": True, "conflicts": conflicts,
                        "msg": "interfaces owned by the storage fabric are also defined in files the role does not "
                        "own: " + "; ".join(conflicts) + ". Nothing was changed. Fix: remove those stanzas from the "
                        "included file (or the port from the inventory) so that one owner remains."}
            problems = unknown_options(stanzas) + check(merged.text)
            if problems:
                return {**result, "failed": True, "problems": problems,
                        "msg": "the rendered interfaces file is not sound, nothing was changed: " + "; ".join(problems)}
            changed = merged.text != current
            result.update(changed=changed, adopted=merged.adopted, carried=merged.carried)
            if self._task.diff:
                result["diff"] = {"before": current, "after": merged.text, "before_header": path,
                                  "after_header": path}
            if changed and not self._task.check_mode:
                installed = install_file(run, path, merged.text, validate, backup)
                if installed.backup:
                    result["backup_file"] = installed.backup
        except SwitchError as exc:
            msg = str(exc).replace(f"the switch rejected the new {path}", "ifupdown2 rejected the new interfaces file")
            return {**result, "failed": True, "msg": msg}
        return result
