"""Handover: the live DGX nodes hold what the inventory says (mounts and their options, readiness, images).

Each check reads the node itself (/proc/mounts, nvidia-smi, ibstat, /sys, /proc/sys, docker) over SSH and
compares it with the inventory through the same code the roles use (module_utils/dgx_*.py), so a pass here
means the live state, not a log of what a playbook once did. A failure names the node, what differs and the fix.
"""

from __future__ import annotations

import json
import shlex

import pytest
from ansible.module_utils.dgx_nfs import DesiredMount, compare_live, describe, find_mount, parse_mounts_table
from ansible.module_utils.dgx_readiness import (
    NVIDIA_SMI_QUERY,
    DgxFacts,
    Expectations,
    ToolResult,
    evaluate,
    failures,
    format_checks,
    parse_ibstat,
    parse_nvidia_smi,
)
from dgx_nfs_plan import build_plan as build_nfs_plan
from dgx_ngc_plan import build_plan as build_ngc_plan
from handover_inventory import NodeSpec, handover_nodes


def nfs_plan(node: NodeSpec) -> tuple[dict, list[dict]]:
    v = node.vars
    return build_nfs_plan({
        "host": node.name, "dgx_hosts": node.dgx_hosts, "nfs_server_mode": v.get("nfs_server_mode"),
        "nfs_server_map": v.get("nfs_server_map") or {}, "powerscale_nodes": node.powerscale_nodes,
        "powerscale_smartconnect": v.get("powerscale_smartconnect") or {}, "nfs_mounts": v.get("nfs_mounts") or [],
        "powerscale_exports": v.get("powerscale_exports") or [],
    })


def ngc_plan(node: NodeSpec) -> tuple[dict, list[dict]]:
    v = node.vars
    mirror = {k: val for k, val in (v.get("ngc_mirror") or {}).items() if k != "password"}
    return build_ngc_plan({
        "host": node.name, "ngc_registry": v.get("ngc_registry", "nvcr.io"), "ngc_images": v.get("ngc_images") or [],
        "ngc_optional_images": v.get("ngc_optional_images") or [],
        "ngc_pull_optional": bool(v.get("ngc_pull_optional", False)), "ngc_mirror": mirror,
    })


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    nodes = handover_nodes(metafunc.config)
    if "node" in metafunc.fixturenames:
        metafunc.parametrize("node", nodes, ids=[n.name for n in nodes])
    if "node_mount" in metafunc.fixturenames:
        params, ids = [], []
        for node in nodes:
            plan, rows = nfs_plan(node)
            for mount in plan.get("mounts", []) or [{"path": "(inventory)", "problems": rows}]:
                params.append((node, mount))
                ids.append(f"{node.name}:{mount['path']}")
        metafunc.parametrize("node_mount", params, ids=ids)
    if "node_image" in metafunc.fixturenames:
        params, ids = [], []
        for node in nodes:
            plan, rows = ngc_plan(node)
            for image in plan.get("images", []) or [{"target": "(inventory)", "problems": rows}]:
                params.append((node, image))
                ids.append(f"{node.name}:{image['target']}")
        metafunc.parametrize("node_image", params, ids=ids)


def _fix(node: NodeSpec, stage: str) -> str:
    return f"Fix: ansible-playbook -i <inventory> playbooks/{stage}.yml --limit {node.name}, then re-run this check."


# ------------------------------------------------------------------------------------------------- mounts


def test_share_is_mounted_with_the_inventory_options(node_mount, testinfra_hosts):
    node, mount = node_mount
    assert "problems" not in mount, f"{node.name}: the inventory's NFS settings are invalid: {mount['problems']}"
    host = testinfra_hosts(node)
    live = find_mount(parse_mounts_table(host.file("/proc/mounts").content_string), mount["path"])
    desired = DesiredMount(src=mount["src"], path=mount["path"], fstype=mount["fstype"],
                           options=tuple(mount["opts"].split(",")))
    comparison = compare_live(desired, live)
    assert comparison.mounted, (
        f"{node.name}: {mount['path']} is NOT mounted (expected {mount['src']} with {mount['opts']}). "
        + _fix(node, "compute"))
    assert comparison.in_sync, (
        f"{node.name}: {mount['path']} differs from the inventory: {describe(comparison)}. "
        f"Live: {live.src} {live.raw_options}. " + _fix(node, "compute"))


def test_share_is_in_fstab_for_the_next_boot(node_mount, testinfra_hosts):
    node, mount = node_mount
    assert "problems" not in mount, f"{node.name}: the inventory's NFS settings are invalid: {mount['problems']}"
    fstab = find_mount(parse_mounts_table(testinfra_hosts(node).file("/etc/fstab").content_string), mount["path"])
    assert fstab is not None, f"{node.name}: {mount['path']} is not in /etc/fstab. " + _fix(node, "compute")
    assert (fstab.src, fstab.fstype, fstab.raw_options) == (mount["src"], mount["fstype"], mount["opts"]), (
        f"{node.name}: /etc/fstab has {fstab.src} {fstab.fstype} {fstab.raw_options}, the inventory wants "
        f"{mount['src']} {mount['fstype']} {mount['opts']}. " + _fix(node, "compute"))


def test_share_answers(node_mount, testinfra_hosts):
    """A mounted share that hangs or errors is not a handover: stat it with a bound on time."""
    node, mount = node_mount
    assert "problems" not in mount, f"{node.name}: the inventory's NFS settings are invalid: {mount['problems']}"
    result = testinfra_hosts(node).run(f"timeout 20 stat -f -c %T {shlex.quote(mount['path'])}")
    assert result.rc == 0 and "nfs" in result.stdout, (
        f"{node.name}: {mount['path']} does not answer as NFS (rc {result.rc}: "
        f"{(result.stdout + result.stderr).strip()[:200]}). " + _fix(node, "compute"))


# ------------------------------------------------------------------------------------------------- readiness


def gather_facts(host, node: NodeSpec) -> DgxFacts:
    facts = DgxFacts()
    if host.exists("nvidia-smi"):
        smi = host.run(f"timeout 60 nvidia-smi --query-gpu={NVIDIA_SMI_QUERY} --format=csv,noheader")
        if smi.rc != 0:
            facts.gpu_probe = ToolResult(present=True, error=f"rc {smi.rc}: {(smi.stderr or smi.stdout).strip()}")
        else:
            try:
                facts.gpus, facts.gpu_probe = parse_nvidia_smi(smi.stdout), ToolResult(present=True)
            except ValueError as exc:
                facts.gpu_probe = ToolResult(present=True, error=str(exc))
    if host.exists("ibstat"):
        ib = host.run("timeout 60 ibstat")
        if ib.rc != 0 and "No IB devices" not in ib.stdout + ib.stderr:
            facts.hca_probe = ToolResult(present=True, error=f"rc {ib.rc}: {(ib.stderr or ib.stdout).strip()}")
        else:
            try:
                facts.hcas, facts.hca_probe = parse_ibstat(ib.stdout if ib.rc == 0 else ""), ToolResult(True)
            except ValueError as exc:
                facts.hca_probe = ToolResult(present=True, error=str(exc))
    fabric = host.run("systemctl is-active nvidia-fabricmanager")
    facts.fabricmanager = (fabric.stdout.strip().splitlines() or ["unknown"])[0]
    modules = host.file("/proc/modules").content_string.splitlines()
    facts.modules = sorted({line.split()[0] for line in modules if line.split()})
    for nic in node.vars.get("storage_nics") or []:
        mtu = host.file(f"/sys/class/net/{nic['name']}/mtu")
        facts.nic_mtu[nic["name"]] = int(mtu.content_string.strip()) if mtu.exists else None
    for key in (node.vars.get("dgx_sysctl") or {}):
        path = host.file("/proc/sys/" + key.replace(".", "/"))
        facts.sysctl[key] = path.content_string.strip() if path.exists else None
    return facts


def test_node_is_ready(node, testinfra_hosts):
    v = node.vars
    model = (v.get("dgx_models") or {}).get(v.get("dgx_model"))
    assert model, f"{node.name}: dgx_model={v.get('dgx_model')!r} is not in dgx_models"
    want = Expectations.from_inventory(model, v.get("dgx_nvidia_driver_version", ""), v.get("storage_nics") or [],
                                       v.get("dgx_sysctl") or {})
    checks = evaluate(gather_facts(testinfra_hosts(node), node), want)
    failed = failures(checks)
    assert not failed, (f"{node.name} ({v.get('dgx_model')}) is not ready:\n{format_checks(failed)}\n"
                        + _fix(node, "compute"))


# ------------------------------------------------------------------------------------------------- images


def test_image_is_present_with_the_pinned_digest(node_image, testinfra_hosts):
    node, image = node_image
    assert "problems" not in image, f"{node.name}: the inventory's NGC settings are invalid: {image['problems']}"
    result = testinfra_hosts(node).run(f"docker image inspect {shlex.quote(image['target'])}")
    assert result.rc == 0, (f"{node.name}: image {image['target']} is NOT present "
                            f"({(result.stderr or result.stdout).strip()[:200]}). " + _fix(node, "containers"))
    [info] = json.loads(result.stdout)
    assert image["target"] in (info.get("RepoTags") or [])
    if image["digest"]:
        pinned = f"{image['source_repository']}@{image['digest']}"
        assert pinned in (info.get("RepoDigests") or []), (
            f"{node.name}: {image['target']} is not the pinned image {pinned}; it has {info.get('RepoDigests')}. "
            + _fix(node, "containers"))
