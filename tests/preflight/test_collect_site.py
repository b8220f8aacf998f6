"""plugins/action/preflight_inventory.py `resolved`: a value the hosts share without a template is resolved once for
all of them (so a site-wide list costs the same at 140 hosts as at 2), a templated one for each host in its context."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from tests.preflight.preflight_sites import action_plugin


class View(Mapping):
    """A host's variables as HostVarsVars holds them: raw values in `_vars`, resolved on access (counted)."""

    def __init__(self, raw: dict[str, Any], host: str, calls: list[tuple[str, str]]) -> None:
        self._vars, self.host, self.calls = raw, host, calls

    def __getitem__(self, name: str) -> Any:
        self.calls.append((self.host, name))
        value = self._vars[name]
        return value.replace("{{ inventory_hostname }}", self.host) if isinstance(value, str) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._vars)

    def __len__(self) -> int:
        return len(self._vars)


def resolve_all(raw_by_host: dict[str, dict[str, Any]], name: str) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    plugin, shared, calls = action_plugin(), {}, []
    values = {h: plugin.resolved(View(raw, h, calls), raw, name, shared) for h, raw in raw_by_host.items()}
    return values, calls


def test_a_shared_value_without_template_is_resolved_once():
    cables = [{"host": f"dgx{i:03d}", "hca": f"mlx5_{j}", "port": f"1/{i}"} for i in range(140) for j in range(8)]
    raw = {f"dgx{i:03d}": {"compute_fabric_cables": cables} for i in range(140)}
    values, calls = resolve_all(raw, "compute_fabric_cables")
    assert len(calls) == 1
    assert all(v == cables for v in values.values())


def test_a_templated_value_is_resolved_for_each_host_in_its_own_context():
    template = "{{ inventory_hostname }}.storage.example.com " + "x" * 80
    values, calls = resolve_all({"dgx01": {"name": template}, "dgx02": {"name": template}}, "name")
    assert len(calls) == 2
    assert values["dgx01"].startswith("dgx01.") and values["dgx02"].startswith("dgx02.")


def test_a_template_deep_inside_a_shared_value_is_resolved_for_each_host():
    mounts = [{"server": "ps", "options": ["hard", "clientaddr={{ inventory_hostname }}"]}] * 3
    _, calls = resolve_all({"dgx01": {"nfs_mounts": mounts}, "dgx02": {"nfs_mounts": mounts}}, "nfs_mounts")
    assert len(calls) == 2


def test_equal_values_of_different_hosts_are_resolved_apart():
    raw = {h: {"storage_nics": [{"name": "storage0", "address": "198.51.100.11/24"}]} for h in ("dgx01", "dgx02")}
    values, calls = resolve_all(raw, "storage_nics")
    assert len(calls) == 2 and values["dgx01"] == values["dgx02"]
