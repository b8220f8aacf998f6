"""Action plugin host_state: read a host's packages, services, files and docker images in one shell command and
say what differs, agentless.

Documentation: library/host_state.py. The command (module_utils/host_state.py probe_script, framing
module_utils/shell_probe.py) runs over the task's connection with the task's become; the control node judges the
answer (state_from_probe). On a converged DGX the containers stage's only read, and it starts no Python on the
node (a module's start cost about 4 s of every run on the lab's VMs).
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
from ansible.module_utils.host_state import FileWant, ServiceWant, probe_script, state_from_probe  # noqa: E402
from ansible.module_utils.shell_probe import ProbeError, run_and_judge  # noqa: E402

ARGUMENT_SPEC: dict[str, Any] = {
    "packages": {"type": "list", "elements": "str", "default": []},
    "services": {"type": "list", "elements": "dict", "default": [], "options": {
        "name": {"type": "str", "required": True},
        "enabled": {"type": "bool", "default": True},
        "started": {"type": "bool", "default": True}}},
    "files": {"type": "list", "elements": "dict", "default": [], "options": {
        "path": {"type": "path", "required": True},
        "state": {"type": "str", "choices": ["file", "directory"], "default": "file"},
        "sha1": {"type": "str"},
        "owner": {"type": "str"},
        "group": {"type": "str"},
        "mode": {"type": "str"}}},
    "docker_images": {"type": "list", "elements": "str", "default": []},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        host = (task_vars or {}).get("inventory_hostname", "?")
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        services = [ServiceWant(s["name"], s["enabled"], s["started"]) for s in args["services"]]
        files = [FileWant(**f) for f in args["files"]]
        packages, images = list(args["packages"]), list(args["docker_images"])
        try:
            script = probe_script(packages, services, files, images)
        except ProbeError as exc:
            return {**result, "failed": True, "msg": f"host_state: {exc}"}
        return {**result, **run_and_judge(action_runner(self), host, "reading the host", script,
                                          lambda out: state_from_probe(out, packages, services, files, images))}
