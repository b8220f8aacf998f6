"""Action plugin cumulus_release_facts: the switch's Cumulus Linux release and what the files method writes
for its breakouts on that release, agentless.

Documentation: library/cumulus_release_facts.py. /etc/lsb-release is read with `cat` over the task's
connection; the release model (module_utils/cumulus_release.py) does the rest on the control node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.plugins.action import ActionBase

_UTILS = str(Path(__file__).resolve().parents[2] / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.cumulus_release import ReleaseError, files_breakouts  # noqa: E402
from ansible.module_utils.cumulus_switch import SwitchError, action_runner, read_file  # noqa: E402


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("breakouts", "expected", "path"))

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        host = (task_vars or {}).get("inventory_hostname", "?")
        breakouts = args.get("breakouts") or {}
        if not isinstance(breakouts, dict):
            return {**result, "failed": True, "msg": f"cumulus_release_facts: breakouts must be a mapping, got {breakouts!r}"}
        path = str(args.get("path") or "/etc/lsb-release")
        try:
            text = read_file(action_runner(self), path)
            facts = files_breakouts(text, {str(k): str(v) for k, v in breakouts.items()}, str(args.get("expected") or ""))
        except (SwitchError, ReleaseError) as exc:
            return {**result, "failed": True,
                    "msg": f"{host}: {exc}; nothing was changed. Fix: run the files method on a Cumulus Linux switch "
                    "whose release the role models, and set sn3700v_cumulus_release to it."}
        return {**result, "changed": False, **facts}
