"""module_utils/shared_values.py: a value the hosts share without a template is resolved once for all of them (so
a site-wide list costs the same at 140 hosts as at 2), a templated one for each host in its context. Preflight's
inventory phase and the cable plan resolve through it; the whole-inventory results are compared in
tests/scale/test_sitegen.py and tests/cabling."""

from __future__ import annotations

from typing import Any

from ansible.module_utils.shared_values import SharedValues, has_template


def resolve_all(raw_by_host: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    shared, calls = SharedValues(), []

    def render(host: str, raw: Any) -> Any:
        calls.append(host)
        return raw.replace("{{ inventory_hostname }}", host) if isinstance(raw, str) else raw

    values = {h: shared.resolve(raw, lambda h=h, raw=raw: render(h, raw)) for h, raw in raw_by_host.items()}
    return values, calls


def test_a_shared_value_without_template_is_resolved_once():
    cables = [{"host": f"dgx{i:03d}", "hca": f"mlx5_{j}", "port": f"1/{i}"} for i in range(140) for j in range(8)]
    values, calls = resolve_all({f"dgx{i:03d}": cables for i in range(140)})
    assert len(calls) == 1
    assert all(v == cables for v in values.values())


def test_a_templated_value_is_resolved_for_each_host_in_its_own_context():
    template = "{{ inventory_hostname }}.storage.example.com " + "x" * 80
    values, calls = resolve_all({"dgx01": template, "dgx02": template})
    assert calls == ["dgx01", "dgx02"]
    assert values["dgx01"].startswith("dgx01.") and values["dgx02"].startswith("dgx02.")


def test_a_template_deep_inside_a_shared_value_is_resolved_for_each_host():
    mounts = [{"server": "ps", "options": ["hard", "clientaddr={{ inventory_hostname }}"]}] * 3
    assert has_template(mounts) and not has_template([{"server": "ps", "options": ["hard"]}])
    _, calls = resolve_all({"dgx01": mounts, "dgx02": mounts})
    assert calls == ["dgx01", "dgx02"]


def test_equal_values_of_different_hosts_are_resolved_apart():
    values, calls = resolve_all({h: [{"name": "storage0", "address": "198.51.100.11/24"}] for h in ("dgx01", "dgx02")})
    assert calls == ["dgx01", "dgx02"] and values["dgx01"] == values["dgx02"]
