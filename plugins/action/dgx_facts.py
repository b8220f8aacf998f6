"""Action plugin dgx_facts: gather DGX readiness facts and check them as data against the inventory, agentless.

Documentation: library/dgx_facts.py. One shell command over the task's connection runs every probe
(module_utils/dgx_readiness.py probe_script: nvidia-smi, ibstat, the fabric manager's state, /proc/modules, the
storage NICs' MTU, the sysctl values); the control node parses the answer and evaluates it (facts_from_probe,
readiness_result). On a converged DGX this is the readiness check's only remote call, and it starts no Python
on the node (a module's start cost about 4 s of every run on the lab's VMs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ansible.module_utils
from ansible.plugins.action import ActionBase

_UTILS = str(Path(__file__).resolve().parents[2] / "module_utils")
if _UTILS not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(_UTILS)

from ansible.module_utils.cumulus_switch import action_runner  # noqa: E402
from ansible.module_utils.dgx_readiness import facts_from_probe, probe_script, readiness_result  # noqa: E402
from ansible.module_utils.shell_probe import run_and_judge  # noqa: E402

# The options as library/dgx_facts.py documents them, checked as host_state's plugin checks its own
ARGUMENT_SPEC: dict[str, Any] = {
    "storage_nics": {"type": "list", "elements": "str", "default": []},
    "sysctl_keys": {"type": "list", "elements": "str", "default": []},
    "expected": {"type": "dict"},
    "command_timeout": {"type": "int", "default": 60},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        host = (task_vars or {}).get("inventory_hostname", "?")
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        nics, keys, expected = list(args["storage_nics"]), list(args["sysctl_keys"]), args["expected"]
        try:
            script = probe_script(nics, keys, args["command_timeout"])
        except ValueError as exc:
            return {**result, "failed": True, "msg": f"dgx_facts: {exc}"}
        return {**result, **run_and_judge(action_runner(self), host, "the readiness probe", script,
                                          lambda out: readiness_result(facts_from_probe(out, nics, keys), expected))}
