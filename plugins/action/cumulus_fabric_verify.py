"""Action plugin cumulus_fabric_verify: the switch's live state against the plan, agentless.

Documentation: library/cumulus_fabric_verify.py. `ip -d -j link show`, `bridge -j vlan show`, `ip -j addr show
dev lo` and `clagctl -j` run on the switch as plain shell commands; their JSON is parsed and compared here
(module_utils/cumulus_live.py). A command that fails or prints no JSON fails the task (fail closed), except
`clagctl -j` failing, which is reported as clagd not running.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.plugins.action import ActionBase

_UTILS = str(Path(__file__).resolve().parents[2] / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.cumulus_switch import (  # noqa: E402
    SwitchError,
    action_runner,
    live_mismatches,
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("plan", "require_link_up", "wait_seconds", "repair_command"))

    def _mismatches(self, plan: dict[str, Any], require_up: bool, wait_seconds: int) -> list[str]:
        run = action_runner(self)
        deadline = time.monotonic() + max(0, wait_seconds)
        while True:
            mismatches = live_mismatches(run, plan, require_up)
            if not mismatches or time.monotonic() >= deadline:
                return mismatches
            time.sleep(2)

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        args = self._task.args
        plan = args.get("plan")
        if not isinstance(plan, dict) or "bridge" not in plan:
            return {**result, "failed": True, "msg": "cumulus_fabric_verify: plan (from cumulus_fabric_plan) is required"}
        require_up = bool(args.get("require_link_up", True))
        wait = int(args.get("wait_seconds", 30))
        repair = str(args.get("repair_command") or "")
        checked = [p["name"] for p in plan.get("ports", [])] + [u["name"] for u in plan.get("uplinks", [])]
        result.update(changed=False, checked=checked, repaired=[], mismatches=[])
        try:
            # With a repair at hand, do not wait long for a state that a reload would fix anyway.
            mismatches = self._mismatches(plan, require_up, min(wait, 10) if repair else wait)
            if mismatches and repair:
                # --diff shows what drifted (the files are right: the repair brings the kernel to them).
                result["diff"] = {"before_header": f"{plan.get('switch')}: live state",
                                  "after_header": f"{plan.get('switch')}: after `{repair}` (the installed files)",
                                  "before": "".join(f"{m}\n" for m in mismatches), "after": ""}
            if mismatches and repair and self._task.check_mode:
                result.update(changed=True, mismatches=mismatches,
                              msg=f"would run `{repair}` to repair: " + "; ".join(mismatches))
                return result
            if mismatches and repair:
                outcome = action_runner(self)(repair)
                if outcome.rc != 0:
                    return {**result, "failed": True, "mismatches": mismatches,
                            "msg": f"the live state differed ({'; '.join(mismatches)}) and `{repair}` failed "
                            f"(rc={outcome.rc}): {outcome.output()}"}
                result.update(changed=True, repaired=mismatches)
                mismatches = self._mismatches(plan, require_up, wait)
        except SwitchError as exc:
            return {**result, "failed": True, "msg": f"{plan.get('switch')}: {exc}"}
        if mismatches:
            return {**result, "failed": True, "mismatches": mismatches,
                    "msg": f"the live state of {plan.get('switch')} does not match the inventory "
                    f"({len(mismatches)} mismatch(es)):\n  " + "\n  ".join(mismatches)}
        return result
