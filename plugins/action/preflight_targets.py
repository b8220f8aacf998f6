"""Action plugin: judge every target's probe (Python, OS release, kernel) and render one table.

Runs once, on the controller, after the `raw` probe ran on each Linux target of the play. Reads each host's
registered probe result and its requirements from hostvars (DGX: dgx_supported_os, dgx_min_kernel,
dgx_min_python; other groups: preflight_target_os[group] and preflight_min_python) and evaluates
module_utils/preflight_targets.py. Never fails by itself: the role prints the table and fails on errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import ansible.module_utils
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase


def load_module_utils(name: str) -> ModuleType:
    """Import ansible.module_utils.<name> from the project's module_utils/ on the controller (see
    preflight_inventory.py for why a controller-side plugin needs this)."""
    if __name__.startswith("ansible_collections."):  # built into the collection: its own module_utils
        return importlib.import_module(f"{__name__.split('.plugins.', maxsplit=1)[0]}.plugins.module_utils.{name}")
    configured = C.config.get_config_value("DEFAULT_MODULE_UTILS_PATH") or []
    for path in [*configured, str(Path(__file__).resolve().parents[2] / "module_utils")]:
        if Path(path, f"{name}.py").is_file() and path not in ansible.module_utils.__path__:
            ansible.module_utils.__path__.append(path)
    return importlib.import_module(f"ansible.module_utils.{name}")


def lookup(view: Any, name: str, default: Any = None) -> Any:
    try:
        return view.get(name, default)
    except AnsibleError:
        return default


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("hosts", "probe_var"))
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        targets = load_module_utils("preflight_targets")
        rows_module = load_module_utils("inventory_problem")
        hostvars = task_vars["hostvars"]
        probe_var = str(self._task.args.get("probe_var", "preflight_probe"))
        rows: list[dict[str, Any]] = []
        checked, skipped, seen = [], [], []
        for host in list(self._task.args.get("hosts") or []):
            view = hostvars[host]
            probe = lookup(view, probe_var)
            if isinstance(probe, Mapping) and probe.get("skipped"):
                skipped.append(host)
                continue
            checked.append(host)
            if not isinstance(probe, Mapping):
                probe = {"failed": True, "rc": None, "msg": "the probe did not run on this host"}
            probe = dict(probe, ansible_host=str(lookup(view, "ansible_host", host)))
            groups = list(lookup(view, "group_names", []))
            if "dgx" in groups:
                req = targets.Requirement(
                    supported_os=lookup(view, "dgx_supported_os", []), os_var="dgx_supported_os",
                    min_python=str(lookup(view, "dgx_min_python", "")), python_var="dgx_min_python",
                    min_kernel=str(lookup(view, "dgx_min_kernel", "")), kernel_var="dgx_min_kernel")
            else:
                group = next((g for g in ("sn3700v", "powerscale") if g in groups), groups[0] if groups else "all")
                req = targets.Requirement(
                    supported_os=dict(lookup(view, "preflight_target_os", {}) or {}).get(group, []),
                    os_var=f"preflight_target_os.{group}",
                    min_python=targets.min_python_for(group, str(lookup(view, "preflight_min_python", ""))),
                    python_var="preflight_min_python")
            rows += [p.as_dict() for p in targets.check_target(host, probe, req)]
            seen.append(f"{host}: {targets.describe(probe)}")
        errors = targets.count_errors(rows)
        table = rows_module.render_table(rows, f"preflight (targets: {len(checked)} checked)")
        if seen:
            table += "\nfound on the targets:\n" + "\n".join(f"  {line}" for line in seen)
        if skipped:
            table += "\nnot probed (OneFS nodes, reached only through the Platform API): " + ", ".join(skipped)
        result.update(changed=False, rows=rows, error_count=errors, warning_count=len(rows) - errors, table=table,
                      checked=checked, skipped=skipped)
        return result
