"""Action plugin: check the whole inventory on the controller, before anything touches a target.

Runs on localhost. Reads, through `hostvars`, every variable the stages consume for every host of the groups
dgx, powerscale, sn3700v and qm8700 plus the group-level (`all`) view, resolves each one on its own (a broken
template becomes a row of the table, not a crash), checks where each secret comes from without ever
returning its value, and evaluates module_utils/preflight_rules.py. Returns the rows and the rendered table;
it never fails by itself: the role prints the table and then fails on errors.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

import ansible.module_utils
from ansible import constants as C
from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase


def load_module_utils(name: str) -> ModuleType:
    """Import ansible.module_utils.<name> from the project's module_utils/ on the controller.

    Ansible ships module_utils/ to targets with a module, but a controller-side plugin outside a collection
    cannot import it by itself; so extend the package path with the configured module_utils paths
    (ansible.cfg), as tests/conftest.py does for the tests."""
    if __name__.startswith("ansible_collections."):  # built into the collection: its own module_utils
        return importlib.import_module(f"{__name__.split('.plugins.', maxsplit=1)[0]}.plugins.module_utils.{name}")
    configured = C.config.get_config_value("DEFAULT_MODULE_UTILS_PATH") or []
    for path in [*configured, str(Path(__file__).resolve().parents[2] / "module_utils")]:
        if Path(path, f"{name}.py").is_file() and path not in ansible.module_utils.__path__:
            ansible.module_utils.__path__.append(path)
    return importlib.import_module(f"ansible.module_utils.{name}")


def plain(value: Any) -> Any:
    """Ansible's tagged/lazy containers as plain JSON-able Python data."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [plain(v) for v in value]
    return str(value)


def row_about(row: Mapping[str, Any], variables: Any, host: Any, hosts: Any) -> bool:
    """Whether a row counts for a role's own input check (roles/preflight/tasks/rules.yml): about one of
    ``variables`` (indices written as [], so storage_nics[0].name is storage_nics[].name; a name ending in .* takes
    every part of it), and about ``host`` or a group (its host column names no inventory host). No variables, no
    host: every row counts."""
    variable = re.sub(r"\[\d+\]", "[]", str(row["variable"]))
    if variables and not any(variable == v or (v.endswith(".*") and variable.startswith(v[:-1]))
                             for v in map(str, variables)):
        return False
    return not host or row["host"] == host or row["host"] not in hosts


def reason(exc: Exception) -> str:
    """The first line of an error, short enough for the table."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def is_clear_text(raw: Any) -> bool:
    """A secret written as a literal string (not a template, not a vault-encrypted value)."""
    if type(raw).__name__ == "EncryptedString" or not isinstance(raw, str):
        return False
    return bool(raw.strip()) and "{{" not in raw and "{%" not in raw


def metric_definitions(root: Path | None = None) -> dict[str, Any] | None:
    """The validation's metric definitions (validation/metrics.yml), read by validation/metrics.py's load, the one
    reader, loaded from this project's file on its own (it imports nothing of the package); None where the project's
    validation package is not beside the plugins (a collection installed without it)."""
    path = (root or Path(__file__).resolve().parents[2]) / "validation" / "metrics.py"
    if not path.is_file():
        return None
    name = "validation_metrics_for_preflight"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # its dataclasses look their module up there while the file runs
        spec.loader.exec_module(module)
    return module.as_plain(module.load())


def collect_site(hostvars: Any, groups: Mapping[str, Any], offline: bool, settings: Any = None) -> Any:
    """The rules' view of the inventory: every consumed variable of every host of the four groups, resolved one
    by one, the group-level view (`all`, as the implicit localhost sees it) and the state of each secret."""
    rules = load_module_utils("preflight_rules")
    schema = load_module_utils("preflight_schema")
    members = {g: list(groups.get(g, [])) for g in rules.GROUPS}
    names = [n for n in schema.VARIABLE_NAMES if n not in rules.SECRET_NAMES] + [
        "ansible_host", "ansible_port", "ansible_connection", "ansible_user"]
    site = rules.Site(groups=members, hostvars={}, allvars={}, offline=offline,
                      settings=settings or rules.Settings(), metrics=metric_definitions())
    hosts = sorted({h for group in members.values() for h in group})
    # A value the hosts share without a template is resolved once (module_utils/shared_values.py).
    shared = load_module_utils("shared_values").SharedValues()
    for host in ["localhost", *hosts]:
        view = hostvars[host]
        # The host's raw (untemplated) variables: the view's own (HostVarsVars), else Ansible's public reader.
        raw_vars = getattr(view, "_vars", None)
        if not isinstance(raw_vars, Mapping):
            raw_vars = hostvars.raw_get(host)
        values: dict[str, Any] = {}
        for name in names:
            if name not in view:
                continue
            try:
                values[name] = shared.resolve(raw_vars.get(name), lambda name=name, view=view: plain(view[name]))
            except AnsibleError as exc:
                # The group-level view is only a label for the table ("all"): a variable that needs
                # inventory host context (e.g. inventory_dir) is judged on the hosts that consume it.
                if host != "localhost":
                    site.unresolved.setdefault(host, {})[name] = reason(exc)
        if host == "localhost":
            site.allvars = values
        else:
            site.hostvars[host] = values
    site.secrets = secret_states(rules, hostvars, members, offline)
    return site


def secret_states(rules: ModuleType, hostvars: Any, groups: Mapping[str, list[str]], offline: bool) -> list[Any]:
    """Where each secret stands, per consuming group. Values are looked at, never kept or returned."""
    states = []
    raw_all = hostvars.raw_get("localhost")
    for secret in rules.SECRETS:
        consumers = groups.get(secret.group) or ["localhost"]
        for host in ["localhost", *consumers]:
            raw = raw_all.get(secret.name) if host == "localhost" else hostvars.raw_get(host).get(secret.name)
            if is_clear_text(raw):
                label = "all" if host == "localhost" or raw == raw_all.get(secret.name) else host
                if rules.SecretState(secret.name, "clear_text", label) not in states:
                    states.append(rules.SecretState(secret.name, "clear_text", label))
        if offline:
            continue
        host = consumers[0]
        try:
            value = hostvars[host].get(secret.name)
        except AnsibleError as exc:
            # The message names the lookup that failed (file, env), never the value.
            states.append(rules.SecretState(secret.name, "error", "all", reason(exc)))
            continue
        empty = value is None or not str(value).strip()
        states.append(rules.SecretState(secret.name, "empty" if empty else "ok", "all"))
        del value
    return states


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(("offline", "settings", "rules", "variables", "host"))
    _requires_connection = False

    def run(self, tmp: Any = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        rules = load_module_utils("preflight_rules")
        rows_module = load_module_utils("inventory_problem")
        offline = bool(self._task.args.get("offline", True))
        settings = rules.Settings(**{k: int(v) for k, v in dict(self._task.args.get("settings") or {}).items()})
        site = collect_site(task_vars["hostvars"], task_vars["groups"], offline, settings)
        only = self._task.args.get("rules")
        try:
            problems = rules.evaluate(site, only=None if only is None else [str(r) for r in only])
        except ValueError as exc:
            return dict(result, failed=True, msg=f"rules={only!r}: {exc}")
        rows = [r for r in (p.as_dict() for p in problems)
                if row_about(r, self._task.args.get("variables"), self._task.args.get("host"), site.hostvars)]
        errors = sum(1 for r in rows if r["severity"] == rows_module.ERROR)
        result.update(
            changed=False,
            rows=rows,
            error_count=errors,
            warning_count=len(rows) - errors,
            table=rows_module.render_table(rows, "preflight (inventory)"),
            hosts=len(site.hostvars),
            rules=len(rules.RULES) if only is None else len(only),
        )
        return result
