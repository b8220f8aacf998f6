"""Every preflight rule with a failing and a passing case.

The passing cases are the real inventories (production and lab) as Ansible resolves them; each failing case
changes one thing in a copy of the production site and expects the rule to name the host and the variable.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from ansible.module_utils import dgx_nfs
from ansible.module_utils import inventory_problem as table_of
from ansible.module_utils import preflight_rules as rules
from ansible.module_utils import preflight_schema as schema

from .preflight_sites import action_plugin, load_site

ERROR, WARNING = rules.ERROR, rules.WARNING


def set_all(site: Any, name: str, value: Any) -> None:
    """As if group_vars/all set `name`: every host and the group-level view see it."""
    site.allvars[name] = copy.deepcopy(value)
    for values in site.hostvars.values():
        if name in values or name in site.allvars:
            values[name] = copy.deepcopy(value)


def edit_all(site: Any, name: str, change: Callable[[Any], None]) -> None:
    value = copy.deepcopy(site.allvars[name])
    change(value)
    set_all(site, name, value)


def nic(site: Any, host: str, pos: int = 0) -> dict[str, Any]:
    return site.hostvars[host]["storage_nics"][pos]


def mount(pos: int, **changes: Any) -> Callable[[Any], None]:
    return lambda v: v[pos].update(changes)


# name -> (mutation of the production site, rule, expected host, expected variable, severity)
CASES: dict[str, tuple[Callable[[Any], None], Callable[[Any], list[Any]], str, str, str]] = {
    # schema
    "schema-nconnect-range": (lambda s: edit_all(s, "nfs_mounts", mount(0, nconnect=17)),
                              rules.rule_schema, "all", "nfs_mounts[0].nconnect", ERROR),
    "schema-vers-enum": (lambda s: edit_all(s, "nfs_mounts", mount(1, vers="5")),
                         rules.rule_schema, "all", "nfs_mounts[1].vers", ERROR),
    "schema-proto-enum": (lambda s: edit_all(s, "nfs_mounts", mount(0, proto="udp")),
                          rules.rule_schema, "all", "nfs_mounts[0].proto", ERROR),
    "schema-rsize-above-1mib": (lambda s: edit_all(s, "nfs_mounts", mount(0, rsize=2097152)),
                                rules.rule_schema, "all", "nfs_mounts[0].rsize", ERROR),
    "schema-unknown-key": (lambda s: edit_all(s, "nfs_mounts", mount(0, nconect=8)),
                           rules.rule_schema, "all", "nfs_mounts[0].nconect", ERROR),
    "schema-type-string-for-int": (lambda s: set_all(s, "storage_fabric_port_mtu", "9216"),
                                   rules.rule_schema, "all", "storage_fabric_port_mtu", ERROR),
    "schema-required-host-var": (lambda s: s.hostvars["dgx02"].pop("ib_ipoib_address"),
                                 rules.rule_schema, "dgx02", "ib_ipoib_address", ERROR),
    "schema-host-override": (lambda s: s.hostvars["dgx03"].update(dgx_expected_gpus=40),
                             rules.rule_schema, "dgx03", "dgx_expected_gpus", ERROR),
    "schema-bad-address": (lambda s: nic(s, "dgx01").update(address="198.51.100.300/24"),
                           rules.rule_schema, "dgx01", "storage_nics[0].address", ERROR),
    "schema-bad-port-name": (lambda s: nic(s, "dgx01").update(switch_port="Ethernet1"),
                             rules.rule_schema, "dgx01", "storage_nics[0].switch_port", ERROR),
    "schema-sm-priority-range": (lambda s: s.hostvars["qm8700-01"].update(qm8700_sm_priority=16),
                                 rules.rule_schema, "qm8700-01", "qm8700_sm_priority", ERROR),
    "schema-vlan-id-range": (lambda s: edit_all(s, "storage_fabric_vlans", lambda v: v[0].update(id=4095)),
                             rules.rule_schema, "all", "storage_fabric_vlans[0].id", ERROR),
    "schema-mtu-range": (lambda s: set_all(s, "powerscale_pool_mtu", 9500),
                         rules.rule_schema, "all", "powerscale_pool_mtu", ERROR),
    "schema-digest-format": (lambda s: edit_all(s, "ngc_images", lambda v: v[0].update(digest="sha256:abc")),
                             rules.rule_schema, "all", "ngc_images[0].digest", ERROR),
    "schema-unresolved": (lambda s: s.unresolved.setdefault("dgx01", {}).update(nfs_mounts="'x' is undefined"),
                          rules.rule_schema, "dgx01", "nfs_mounts", ERROR),
    # MTU
    "mtu-dgx-nic": (lambda s: nic(s, "dgx02").update(mtu=1500),
                    rules.rule_mtu, "dgx02", "storage_nics[0].mtu", ERROR),
    "mtu-switch-port": (lambda s: set_all(s, "storage_fabric_port_mtu", 9000),
                        rules.rule_mtu, "all", "storage_fabric_port_mtu", ERROR),
    "mtu-pool": (lambda s: set_all(s, "powerscale_pool_mtu", 1500),
                 rules.rule_mtu, "all", "powerscale_pool_mtu", ERROR),
    "mtu-host-mtu-alone": (lambda s: set_all(s, "storage_fabric_host_mtu", 1500),
                           rules.rule_mtu, "all", "storage_fabric_host_mtu", ERROR),
    # addresses
    "address-outside-subnet": (lambda s: nic(s, "dgx03").update(address="192.0.2.13/24"),
                               rules.rule_storage_addresses, "dgx03", "storage_nics[0].address", ERROR),
    "address-prefix": (lambda s: nic(s, "dgx03").update(address="198.51.100.13/25"),
                       rules.rule_storage_addresses, "dgx03", "storage_nics[0].address", ERROR),
    "address-duplicate": (lambda s: nic(s, "dgx04").update(address="198.51.100.21/24"),
                          rules.rule_storage_addresses, "f800-1", "storage_nics[0].address", ERROR),
    "ipoib-duplicate": (lambda s: s.hostvars["dgx02"].update(ib_ipoib_address="203.0.113.11/24"),
                        rules.rule_ipoib_addresses, "dgx02", "ib_ipoib_address", ERROR),
    "ipoib-other-subnet": (lambda s: s.hostvars["dgx03"].update(ib_ipoib_address="203.0.114.13/24"),
                           rules.rule_ipoib_addresses, "dgx03", "ib_ipoib_address", ERROR),
    "ssh-endpoint-duplicate": (lambda s: s.hostvars["dgx04"].update(ansible_host="192.0.2.13"),
                               rules.rule_management_addresses, "dgx04", "ansible_host", ERROR),
    "qm8700-api-duplicate": (lambda s: s.hostvars["qm8700-02"].update(qm8700_api_host="192.0.2.41"),
                             rules.rule_management_addresses, "qm8700-02", "qm8700_api_host", ERROR),
    "lnn-duplicate": (lambda s: s.hostvars["f800-4"].update(powerscale_lnn=1),
                      rules.rule_ipoib_addresses, "f800-4", "powerscale_lnn", ERROR),
    # cabling
    "cable-unknown-switch": (lambda s: nic(s, "dgx01").update(switch="sn3700v03"),
                             rules.rule_switch_cabling, "dgx01", "storage_nics[0].switch", ERROR),
    "cable-port-33": (lambda s: nic(s, "dgx01").update(switch_port="swp33"),
                      rules.rule_switch_cabling, "dgx01", "storage_nics[0].switch_port", ERROR),
    "cable-two-on-one-port": (lambda s: nic(s, "dgx03").update(switch_port="swp1"),
                              rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "cable-on-peerlink": (lambda s: nic(s, "dgx03").update(switch_port="swp31"),
                          rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "cable-whole-and-breakout": (lambda s: nic(s, "dgx03").update(switch_port="swp1s1"),
                                 rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "cable-breakout-not-declared": (lambda s: nic(s, "dgx03").update(switch_port="swp5s0"),
                                    rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "cable-on-broken-out-whole-port": (lambda s: set_all(s, "storage_fabric_breakouts", {"swp1": "4x25G"}),
                                       rules.rule_switch_cabling, "dgx01", "storage_nics[0].switch_port", ERROR),
    "cable-breakout-lane-missing": (lambda s: (set_all(s, "storage_fabric_breakouts", {"swp5": "2x100G"}),
                                               nic(s, "dgx03").update(switch_port="swp5s2")),
                                    rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "cable-lane-4": (lambda s: (set_all(s, "storage_fabric_breakouts", {"swp5": "4x25G"}),
                                nic(s, "dgx03").update(switch_port="swp5s4")),
                     rules.rule_switch_cabling, "dgx03", "storage_nics[0].switch_port", ERROR),
    "uplink-port-33": (lambda s: set_all(s, "storage_fabric_uplinks", [{"name": "swp33", "speed": "100G"}]),
                       rules.rule_switch_cabling, "all", "storage_fabric_uplinks[0].name", ERROR),
    "peerlink-port-40": (lambda s: edit_all(s, "storage_fabric_clag", lambda v: v["peerlink"].update(
                             members=["swp31", "swp40"])),
                         rules.rule_switch_cabling, "all", "storage_fabric_clag.peerlink.members", ERROR),
    "breakout-port-49": (lambda s: set_all(s, "storage_fabric_breakouts", {"swp49": "4x25G"}),
                         rules.rule_switch_cabling, "all", "storage_fabric_breakouts.swp49", ERROR),
    "schema-breakout-8x": (lambda s: set_all(s, "storage_fabric_breakouts", {"swp29": "8x25G"}),
                           rules.rule_schema, "all", "storage_fabric_breakouts.swp29", ERROR),
    "schema-ipoib-mtu-not-an-ib-mtu": (lambda s: edit_all(s, "qm8700_partitions", lambda v: v[0].update(ipoib_mtu=4096)),
                                       rules.rule_schema, "all", "qm8700_partitions[0].ipoib_mtu", ERROR),
    "schema-breakout-mode": (lambda s: set_all(s, "storage_fabric_breakouts", {"swp49": "quad"}),
                             rules.rule_schema, "all", "storage_fabric_breakouts.swp49", ERROR),
    "cable-speed-unlisted": (lambda s: nic(s, "dgx01").update(speed_gbps=56),
                             rules.rule_port_speed, "dgx01", "storage_nics[0].speed_gbps", ERROR),
    # VLANs
    "vlan-duplicate-id": (lambda s: edit_all(s, "storage_fabric_vlans", lambda v: v.append({"id": 100, "name": "b"})),
                          rules.rule_vlans, "all", "storage_fabric_vlans[1].id", ERROR),
    "vlan-pvid": (lambda s: edit_all(s, "storage_fabric_bridge", lambda v: v.update(pvid=200)),
                  rules.rule_vlans, "all", "storage_fabric_bridge.pvid", ERROR),
    "vlan-peerlink": (lambda s: edit_all(s, "storage_fabric_clag", lambda v: v["peerlink"].update(vlan=100)),
                      rules.rule_vlans, "all", "storage_fabric_clag.peerlink.vlan", ERROR),
    "vlan-subnet": (lambda s: set_all(s, "storage_subnet", "198.51.0.0/16"),
                    rules.rule_vlans, "all", "storage_subnet", ERROR),
    # Cumulus releases: reserved VLANs, FEC with forced speeds, release/method
    "vlan-cumulus-reserved": (lambda s: edit_all(s, "storage_fabric_vlans",
                                                 lambda v: v.append({"id": 3800, "name": "b"})),
                              rules.rule_cumulus_reserved_vlans, "all", "storage_fabric_vlans[1].id", ERROR),
    "vlan-peerlink-cumulus-reserved": (lambda s: edit_all(s, "storage_fabric_clag",
                                                          lambda v: v["peerlink"].update(vlan=3999)),
                                       rules.rule_cumulus_reserved_vlans, "all", "storage_fabric_clag.peerlink.vlan",
                                       ERROR),
    "speed-forced-without-fec": (lambda s: edit_all(s, "storage_fabric_port_fec", lambda v: [v.pop(k, None) for k in (100, "100")]),
                                 rules.rule_forced_speed_fec, "all", "storage_fabric_port_fec", ERROR),
    "uplink-speed-without-fec": (lambda s: (set_all(s, "storage_fabric_uplinks", [{"name": "swp30", "speed": "400G"}])),
                                 rules.rule_forced_speed_fec, "all", "storage_fabric_port_fec", ERROR),
    "breakout-lanes-without-fec": (lambda s: (set_all(s, "sn3700v_cumulus_release", "5.9.2"),
                                              set_all(s, "storage_fabric_breakouts", {"swp29": "4x10G"}),
                                              edit_all(s, "storage_fabric_port_fec",
                                                       lambda v: [v.pop(k, None) for k in (10, "10")])),
                                   rules.rule_forced_speed_fec, "all", "storage_fabric_port_fec", ERROR),
    "speed-left-to-firmware": (lambda s: set_all(s, "storage_fabric_port_speed_managed", False),
                               rules.rule_forced_speed_fec, "all", "storage_fabric_port_speed_managed", WARNING),
    "nvue-on-cumulus-4": (lambda s: set_all(s, "storage_fabric_method", "nvue"),
                          rules.rule_cumulus_release, "all", "storage_fabric_method", ERROR),
    "release-unmodelled": (lambda s: s.hostvars["sn3700v02"].update(sn3700v_cumulus_release="3.7.16"),
                           rules.rule_cumulus_release, "sn3700v02", "sn3700v_cumulus_release", ERROR),
    "nvue-localhost-only": (lambda s: (set_all(s, "storage_fabric_method", "nvue"),
                                       set_all(s, "sn3700v_cumulus_release", "5.4.0")),
                            rules.rule_cumulus_release, "all", "sn3700v_cumulus_release", WARNING),
    # CLAG
    "clag-two-primaries": (lambda s: s.hostvars["sn3700v02"].update(sn3700v_clag_role="primary"),
                           rules.rule_clag, "sn3700v02", "sn3700v_clag_role", ERROR),
    "clag-equal-priority": (lambda s: s.hostvars["sn3700v02"].update(sn3700v_clag_priority=1000),
                            rules.rule_clag, "sn3700v02", "sn3700v_clag_priority", ERROR),
    "clag-primary-higher": (lambda s: s.hostvars["sn3700v01"].update(sn3700v_clag_priority=3000),
                            rules.rule_clag, "sn3700v01", "sn3700v_clag_priority", ERROR),
    "clag-no-backup-ip": (lambda s: s.hostvars["sn3700v01"].pop("sn3700v_clag_backup_ip"),
                          rules.rule_clag, "sn3700v01", "sn3700v_clag_backup_ip", ERROR),
    "clag-backup-self": (lambda s: s.hostvars["sn3700v01"].update(sn3700v_clag_backup_ip="192.0.2.31"),
                         rules.rule_clag, "sn3700v01", "sn3700v_clag_backup_ip", ERROR),
    "clag-off-but-primary": (lambda s: edit_all(s, "storage_fabric_clag", lambda v: v.update(enabled=False)),
                             rules.rule_clag, "sn3700v01", "sn3700v_clag_role", ERROR),
    # subnet manager
    "sm-two-masters": (lambda s: s.hostvars["qm8700-02"].update(qm8700_sm_role="master"),
                       rules.rule_subnet_manager, "qm8700-02", "qm8700_sm_role", ERROR),
    "sm-no-master": (lambda s: s.hostvars["qm8700-01"].update(qm8700_sm_role="standby"),
                     rules.rule_subnet_manager, "qm8700", "qm8700_sm_role", ERROR),
    "sm-equal-priority": (lambda s: s.hostvars["qm8700-02"].update(qm8700_sm_priority=15),
                          rules.rule_subnet_manager, "qm8700-02", "qm8700_sm_priority", ERROR),
    "sm-master-lower": (lambda s: s.hostvars["qm8700-01"].update(qm8700_sm_priority=3),
                        rules.rule_subnet_manager, "qm8700-01", "qm8700_sm_priority", ERROR),
    # HCAs and ports
    "hca-ports-too-few": (lambda s: edit_all(s, "qm8700_ports", lambda v: v[0].update(range="1/1-1/8")),
                          rules.rule_hca_ports, "all", "qm8700_ports", ERROR),
    "hca-port-41": (lambda s: edit_all(s, "qm8700_ports", lambda v: v[0].update(range="1/1-1/41")),
                    rules.rule_hca_ports, "all", "qm8700_ports[0].range", ERROR),
    # node model
    "model-unknown": (lambda s: [s.hostvars[h].update(dgx_model="dgx-h100") for h in s.hosts("dgx")],
                      rules.rule_node_model, "dgx", "dgx_model", ERROR),
    "model-expected-gpus": (lambda s: s.hostvars["dgx02"].update(dgx_expected_gpus=4),
                            rules.rule_node_model, "dgx02", "dgx_expected_gpus", ERROR),
    "model-expected-hcas": (lambda s: s.hostvars["dgx02"].update(dgx_expected_hcas=4),
                            rules.rule_node_model, "dgx02", "dgx_expected_hcas", ERROR),
    "model-ib-rate": (lambda s: set_all(s, "ib_rate_gbps", 100),
                      rules.rule_node_model, "all", "ib_rate_gbps", ERROR),
    "model-runtime-no-gpus": (lambda s: [s.hostvars[h].update(dgx_model="lab-vm") for h in s.hosts("dgx")],
                              rules.rule_node_model, "all", "ngc_container_runtime", ERROR),
    "model-docker-with-gpus": (lambda s: set_all(s, "ngc_container_runtime", "docker"),
                               rules.rule_node_model, "all", "ngc_container_runtime", WARNING),
    "sizing-16-gpus-per-f800": (lambda s: s.groups.update(powerscale=["f800-1", "f800-2"]),
                                rules.rule_sizing, "powerscale", "powerscale_node_model", WARNING),
    # exports and quotas
    "export-duplicate": (lambda s: edit_all(s, "powerscale_exports", lambda v: v.append(dict(v[0]))),
                         rules.rule_exports, "all", "powerscale_exports[2].path", ERROR),
    "quota-outside-export": (lambda s: edit_all(s, "powerscale_quotas", lambda v: v[0].update(path="/ifs/home")),
                             rules.rule_exports, "all", "powerscale_quotas[0].path", ERROR),
    "quota-soft-above-hard": (lambda s: edit_all(s, "powerscale_quotas",
                                                 lambda v: v[0]["thresholds"].update(soft=2 ** 60)),
                              rules.rule_exports, "all", "powerscale_quotas[0].thresholds.soft", ERROR),
    "quota-soft-no-grace": (lambda s: edit_all(s, "powerscale_quotas",
                                               lambda v: v[0]["thresholds"].pop("soft_grace_s")),
                            rules.rule_exports, "all", "powerscale_quotas[0].thresholds.soft_grace_s", ERROR),
    "export-clients-miss-dgx": (lambda s: edit_all(s, "powerscale_exports",
                                                   lambda v: v[0].update(clients=["198.51.100.11", "198.51.100.12"])),
                                rules.rule_export_clients, "all", "powerscale_exports[0].clients", ERROR),
    "export-open-to-all": (lambda s: edit_all(s, "powerscale_exports", lambda v: v[1].update(clients=["0.0.0.0/0"])),
                           rules.rule_export_exposure, "all", "powerscale_exports[1].clients", ERROR),
    "export-root-not-squashed": (lambda s: edit_all(s, "powerscale_exports", lambda v: v[0].update(map_root="root")),
                                 rules.rule_export_exposure, "all", "powerscale_exports[0].map_root", ERROR),
    "export-no-clients-to-derive": (lambda s: [set_all(s, "storage_nics", []), s.groups.update(dgx=[])],
                                    rules.rule_export_exposure, "all", "powerscale_exports[0].clients", ERROR),
    # NFS mounts
    "mount-unknown-export": (lambda s: edit_all(s, "nfs_mounts", mount(0, export="/ifs/data/missing")),
                             rules.rule_nfs_mounts, "all", "nfs_mounts[0].export", ERROR),
    "mount-purpose-differs": (lambda s: edit_all(s, "nfs_mounts", mount(0, purpose="scratch")),
                              rules.rule_nfs_mounts, "all", "nfs_mounts[0].purpose", ERROR),
    "mount-training-soft": (lambda s: edit_all(s, "nfs_mounts", mount(0, hard=False)),
                            rules.rule_nfs_mounts, "all", "nfs_mounts[0].hard", ERROR),
    "mount-soft-in-extra": (lambda s: edit_all(s, "nfs_mounts", mount(1, extra_options=["soft"])),
                            rules.rule_nfs_mounts, "all", "nfs_mounts[1].extra_options[0]", ERROR),
    "mount-typed-in-extra": (lambda s: edit_all(s, "nfs_mounts", mount(1, extra_options=["nconnect=4"])),
                             rules.rule_nfs_mounts, "all", "nfs_mounts[1].extra_options[0]", ERROR),
    "mount-unknown-option": (lambda s: edit_all(s, "nfs_mounts", mount(0, extra_options=["fastest"])),
                             rules.rule_nfs_mounts, "all", "nfs_mounts[0].extra_options[0]", ERROR),
    "mount-rsize-not-pow2": (lambda s: edit_all(s, "nfs_mounts", mount(0, rsize=786432)),
                             rules.rule_nfs_mounts, "all", "nfs_mounts[0].rsize", ERROR),
    "mount-same-point": (lambda s: edit_all(s, "nfs_mounts", mount(1, mount_point="/mnt/training")),
                         rules.rule_nfs_mounts, "all", "nfs_mounts[1].mount_point", ERROR),
    # A host's own value (host_vars), not the group's: preflight resolves a group_vars value once and shares it.
    "mount-one-host-override": (lambda s: s.hostvars["dgx03"].update(nfs_mounts=[
                                    dict(s.hostvars["dgx03"]["nfs_mounts"][0], hard=False),
                                    *s.hostvars["dgx03"]["nfs_mounts"][1:]]),
                                rules.rule_nfs_mounts, "dgx03", "nfs_mounts[0].hard", ERROR),
    "mount-nconnect-old-kernel": (lambda s: set_all(s, "dgx_min_kernel", "4.15"),
                                  rules.rule_nfs_mounts, "all", "dgx_min_kernel", ERROR),
    "validation-scratch-not-mounted": (lambda s: set_all(s, "validation_scratch_mount", "/raid/scratch"),
                                       rules.rule_validation_mounts, "all", "validation_scratch_mount", ERROR),
    "validation-scratch-read-only": (lambda s: edit_all(s, "powerscale_exports", lambda v: v[1].update(read_only=True)),
                                     rules.rule_validation_mounts, "all", "powerscale_exports[1].read_only", ERROR),
    # DGX -> PowerScale
    "map-missing-dgx": (lambda s: edit_all(s, "nfs_server_map", lambda v: v.pop("dgx03")),
                        rules.rule_server_mapping, "all", "nfs_server_map", ERROR),
    "map-unknown-node": (lambda s: edit_all(s, "nfs_server_map", lambda v: v["dgx03"].update(node="f800-9")),
                         rules.rule_server_mapping, "all", "nfs_server_map.dgx03.node", ERROR),
    "map-unknown-nic": (lambda s: edit_all(s, "nfs_server_map", lambda v: v["dgx03"].update(nic="40gige-3")),
                        rules.rule_server_mapping, "all", "nfs_server_map.dgx03.nic", ERROR),
    "map-crosses-peerlink": (lambda s: edit_all(s, "nfs_server_map", lambda v: v["dgx03"].update(nic="40gige-2")),
                             rules.rule_server_mapping, "all", "nfs_server_map.dgx03.nic", WARNING),
    "map-unknown-dgx": (lambda s: edit_all(s, "nfs_server_map", lambda v: v.update(dgx09={"node": "f800-1",
                                                                                           "nic": "40gige-1"})),
                        rules.rule_server_mapping, "all", "nfs_server_map.dgx09", WARNING),
    "smartconnect-mode-disabled": (lambda s: (set_all(s, "nfs_server_mode", "smartconnect"),
                                              edit_all(s, "powerscale_smartconnect", lambda v: v.update(enabled=False))),
                                   rules.rule_server_mapping, "all", "nfs_server_mode", ERROR),
    "smartconnect-mode-no-zone": (lambda s: (set_all(s, "nfs_server_mode", "smartconnect"),
                                             edit_all(s, "powerscale_smartconnect", lambda v: v.update(zone=""))),
                                  rules.rule_server_mapping, "all", "powerscale_smartconnect.zone", ERROR),
    # SmartConnect
    "sc-service-outside": (lambda s: edit_all(s, "powerscale_smartconnect",
                                              lambda v: v.update(service_address="192.0.2.20")),
                           rules.rule_smartconnect, "all", "powerscale_smartconnect.service_address", ERROR),
    "sc-range-reversed": (lambda s: edit_all(s, "powerscale_smartconnect",
                                             lambda v: v["ip_ranges"][0].update(low="198.51.100.29")),
                          rules.rule_smartconnect, "all", "powerscale_smartconnect.ip_ranges[0]", ERROR),
    "sc-range-overlap": (lambda s: edit_all(s, "powerscale_smartconnect",
                                            lambda v: v["ip_ranges"][1].update(low="198.51.100.24")),
                         rules.rule_smartconnect, "all", "powerscale_smartconnect.ip_ranges[1]", ERROR),
    "sc-range-mixed-versions": (lambda s: edit_all(s, "powerscale_smartconnect",
                                                   lambda v: v["ip_ranges"][0].update(high="2001:db8::1")),
                                rules.rule_smartconnect, "all", "powerscale_smartconnect.ip_ranges[0]", ERROR),
    "sc-unknown-interface": (lambda s: edit_all(s, "powerscale_smartconnect",
                                                lambda v: v["interfaces"].append("100gige-1")),
                             rules.rule_smartconnect, "all", "powerscale_smartconnect.interfaces[2]", ERROR),
    "sc-node-outside-range": (lambda s: nic(s, "f800-4", 1).update(address="198.51.100.44/24"),
                              rules.rule_smartconnect, "f800-4", "storage_nics[1].address", ERROR),
    "sc-dgx-inside-range": (lambda s: nic(s, "dgx01").update(address="198.51.100.33/24"),
                            rules.rule_smartconnect, "dgx01", "storage_nics[0].address", ERROR),
    "export-group-root": (lambda s: edit_all(s, "powerscale_exports", lambda v: v[1].update(group="root")),
                          rules.rule_exports, "all", "powerscale_exports[1].group", ERROR),
    # the API host is one node's address; the cache flush needs root
    "api-host-smartconnect-zone": (lambda s: set_all(s, "powerscale_api_host", "dl.storage.example.com"),
                                   rules.rule_powerscale_access, "all", "powerscale_api_host", ERROR),
    "api-host-name-in-zone": (lambda s: set_all(s, "powerscale_api_host", "mgmt.dl.storage.example.com."),
                              rules.rule_powerscale_access, "all", "powerscale_api_host", ERROR),
    "api-host-service-address": (lambda s: set_all(s, "powerscale_api_host", "198.51.100.20"),
                                 rules.rule_powerscale_access, "all", "powerscale_api_host", ERROR),
    "api-host-dynamic-pool-address": (lambda s: set_all(s, "powerscale_api_host", "198.51.100.33"),
                                      rules.rule_powerscale_access, "all", "powerscale_api_host", ERROR),
    "api-host-unknown-name": (lambda s: set_all(s, "powerscale_api_host", "isilon.example.com"),
                              rules.rule_powerscale_access, "all", "powerscale_api_host", WARNING),
    "flush-login-not-root": (lambda s: [s.hostvars[h].update(ansible_user="svc-ansible") for h in s.hosts("powerscale")],
                             rules.rule_powerscale_access, "f800-1", "ansible_user", WARNING),
    # acceptance
    "acceptance-stage-without-threshold": (lambda s: edit_all(s, "acceptance_thresholds", lambda v: v.__setitem__(
        slice(None), [t for t in v if t["stage"] != "ddp"])),
                                           rules.rule_acceptance, "all", "validation_stages.ddp", ERROR),
    "acceptance-unknown-stage": (lambda s: edit_all(s, "acceptance_thresholds", lambda v: v[0].update(stage="hpl")),
                                 rules.rule_acceptance, "all", "acceptance_thresholds[0].stage", ERROR),
    "acceptance-no-bound": (lambda s: edit_all(s, "acceptance_thresholds", lambda v: v[0].pop("floor")),
                            rules.rule_acceptance, "all", "acceptance_thresholds[0]", ERROR),
    "acceptance-duplicate-metric": (lambda s: edit_all(s, "acceptance_thresholds",
                                                       lambda v: v[1].update(metric=v[0]["metric"])),
                                    rules.rule_acceptance, "all", "acceptance_thresholds[1].metric", ERROR),
    "acceptance-hca-ceiling-without-hcas": (lambda s: [s.hostvars[h].update(dgx_model="lab-vm")
                                                       for h in s.hosts("dgx")],
                                            rules.rule_acceptance, "all", "acceptance_thresholds[1].ceiling.derive",
                                            ERROR),
    "nccl-min-above-max": (lambda s: edit_all(s, "validation_nccl", lambda v: v.update(min_bytes=2 ** 40)),
                           rules.rule_acceptance, "all", "validation_nccl.min_bytes", ERROR),
    "nccl-judge-above-max": (lambda s: edit_all(s, "validation_nccl", lambda v: v.update(judge_min_bytes=2 ** 40)),
                             rules.rule_acceptance, "all", "validation_nccl.judge_min_bytes", ERROR),
    "ddp-container-without-image": (lambda s: edit_all(s, "validation_ddp", lambda v: v.update(image="")),
                                    rules.rule_acceptance, "all", "validation_ddp.image", ERROR),
    "schema-fio-ioengine": (lambda s: edit_all(s, "validation_fio", lambda v: v.update(ioengine="aio")),
                            rules.rule_schema, "all", "validation_fio.ioengine", ERROR),
    # NGC, TLS
    "ngc-latest": (lambda s: edit_all(s, "ngc_images", lambda v: v[0].update(tag="latest")),
                   rules.rule_ngc, "all", "ngc_images[0].tag", ERROR),
    "ngc-no-digest": (lambda s: None, rules.rule_ngc, "all", "ngc_images[0].digest", WARNING),
    "ngc-mirror-no-registry": (lambda s: edit_all(s, "ngc_mirror", lambda v: v.update(enabled=True)),
                               rules.rule_ngc, "all", "ngc_mirror.registry", ERROR),
    "ngc-driver-too-old": (lambda s: set_all(s, "dgx_nvidia_driver_version", "450.51.06"),
                           rules.rule_ngc_driver, "all", "dgx_nvidia_driver_version", ERROR),
    "ngc-driver-branch-not-compatible": (lambda s: set_all(s, "dgx_nvidia_driver_version", "530.30.02"),
                                         rules.rule_ngc_driver, "all", "dgx_nvidia_driver_version", ERROR),
    "ngc-release-unknown": (lambda s: edit_all(s, "ngc_images", lambda v: v[0].update(tag="19.01-py3")),
                            rules.rule_ngc_driver, "all", "ngc_images.tag", WARNING),
    "nccl-pyxis-pytorch-image": (lambda s: edit_all(s, "validation_nccl", lambda v: v.update(
        container_image="nvcr.io#nvidia/pytorch:24.05-py3")), rules.rule_ngc_driver, "all",
        "validation_nccl.container_image", WARNING),
    "tls-powerscale-off": (lambda s: set_all(s, "powerscale_validate_certs", False),
                           rules.rule_tls, "all", "powerscale_validate_certs", WARNING),
    "tls-qm8700-off": (lambda s: set_all(s, "qm8700_validate_certs", False),
                       rules.rule_tls, "all", "qm8700_validate_certs", WARNING),
    # secrets
    "secret-clear-text": (lambda s: s.secrets.append(rules.SecretState("ngc_api_key", "clear_text", "all")),
                          rules.rule_secrets, "all", "ngc_api_key", ERROR),
    "secret-empty-online": (lambda s: (setattr(s, "offline", False),
                                       s.secrets.append(rules.SecretState("powerscale_api_password", "empty"))),
                            rules.rule_secrets, "all", "powerscale_api_password", ERROR),
    "secret-lookup-fails-online": (lambda s: (setattr(s, "offline", False), s.secrets.append(
        rules.SecretState("qm8700_api_password", "error", detail="file not found"))),
                                   rules.rule_secrets, "all", "qm8700_api_password", ERROR),
    "secret-mirror-needed": (lambda s: (setattr(s, "offline", False),
                                        edit_all(s, "ngc_mirror", lambda v: v.update(enabled=True, registry="r:5000")),
                                        s.secrets.append(rules.SecretState("ngc_mirror_password", "empty"))),
                             rules.rule_secrets, "all", "ngc_mirror_password", ERROR),
    # compute cabling (module_utils/cabling_design.py): mlx5_1's rail starts on dgx04 mlx5_0's port
    "compute-cable-port-twice": (lambda s: edit_all(s, "compute_fabric_cables",
                                                    lambda v: v["rails"][1].update(first_port=4)),
                                 rules.rule_compute_cabling, "dgx01", "compute_fabric_cables.rails[1]", ERROR),
}

RULE_CASES = {rule: [n for n, c in CASES.items() if c[1] is rule] for rule in rules.RULES}


def test_every_rule_has_a_failing_case():
    missing = [r.__name__ for r, names in RULE_CASES.items() if not names]
    assert not missing, f"rules without a failing case: {missing}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_rule_rejects(name, production):
    mutate, rule, host, variable, severity = CASES[name]
    site = copy.deepcopy(production)
    if rule(site) and name != "ngc-no-digest":
        assert not [p for p in rule(site) if (p.host, p.variable) == (host, variable)], "precondition: clean site"
    mutate(site)
    found = rules.collapse(rule(site), site.groups)
    hits = [p for p in found if (p.host, p.variable, p.severity) == (host, variable, severity)]
    assert hits, f"{name}: expected {severity} for {host} {variable}, got {[(p.host, p.variable) for p in found]}"
    assert all(p.fix for p in hits)
    assert evaluate_has(site, host, variable, severity), "evaluate() must report what the rule reports"


def evaluate_has(site: Any, host: str, variable: str, severity: str) -> bool:
    return any((p.host, p.variable, p.severity) == (host, variable, severity) for p in rules.evaluate(site))


@pytest.mark.parametrize("rule", rules.RULES, ids=lambda r: r.__name__)
@pytest.mark.parametrize("inventory", ["production", "lab"])
def test_rule_passes_on_the_real_inventories(rule, inventory, request):
    site = request.getfixturevalue(inventory)
    errors = [p for p in rule(site) if p.severity == ERROR]
    assert not errors, errors


def test_secrets_pass_when_offline_or_resolved(production):
    site = copy.deepcopy(production)
    site.secrets = [rules.SecretState("ngc_api_key", "empty"), rules.SecretState("ngc_mirror_password", "empty")]
    assert rules.rule_secrets(site) == []  # offline: resolution is not checked
    site.offline = False
    site.secrets = [rules.SecretState(s.name, "ok") for s in rules.SECRETS]
    site.secrets.append(rules.SecretState("ngc_mirror_password", "empty"))  # mirror disabled: not needed
    assert rules.rule_secrets(site) == []


def test_secrets_only_the_stages_use_are_required(production):
    site = copy.deepcopy(production)
    site.offline = False
    site.secrets = [rules.SecretState("storage_fabric_password", "empty")]
    assert rules.rule_secrets(site) == []  # method files: the switches are reached over SSH with keys
    set_all(site, "storage_fabric_method", "nvue")
    assert [p.variable for p in rules.rule_secrets(site)] == ["storage_fabric_password"]
    site.secrets = [rules.SecretState("ngc_api_key", "empty")]
    assert [p.variable for p in rules.rule_secrets(site)] == ["ngc_api_key"]
    edit_all(site, "ngc_mirror", lambda v: v.update(enabled=True, registry="registry.example.com:5000"))
    assert rules.rule_secrets(site) == []  # mirror mode logs in to the site registry, not nvcr.io


def test_secret_values_never_reach_the_table(production):
    site = copy.deepcopy(production)
    site.offline = False
    site.secrets = [rules.SecretState("ngc_api_key", "clear_text"), rules.SecretState("ngc_api_key", "empty")]
    rows = [p.as_dict() for p in rules.evaluate(site)]
    assert {r["value"] for r in rows if r["variable"] == "ngc_api_key"} == {"<secret>"}


def test_cable_on_a_declared_breakout_lane_passes(production):
    site = copy.deepcopy(production)
    set_all(site, "storage_fabric_breakouts", {"swp5": "4x25G"})
    nic(site, "dgx03").update(switch_port="swp5s3")
    assert rules.rule_switch_cabling(site) == []


def test_port_speed_not_judged_when_speeds_are_not_managed(production):
    site = copy.deepcopy(production)
    nic(site, "dgx01").update(speed_gbps=1)
    assert rules.rule_port_speed(site)
    set_all(site, "storage_fabric_port_speed_managed", False)
    assert rules.rule_port_speed(site) == []


def test_lab_hosts_share_an_address_on_distinct_ports(lab):
    assert {lab.hostvars[h]["ansible_host"] for h in ("dgx01", "dgx02")} == {"127.0.0.1"}
    assert rules.rule_management_addresses(lab) == []


def test_sizing_passes_at_eight_gpus_per_f800(production):
    assert rules.rule_sizing(production) == []


def test_export_clients_pass_with_covering_network(production):
    site = copy.deepcopy(production)
    edit_all(site, "powerscale_exports", lambda v: v[0].update(clients=["198.51.100.0/24"]))
    edit_all(site, "powerscale_exports", lambda v: v[1].update(clients=[f"198.51.100.1{i}" for i in range(1, 5)]))
    assert rules.rule_export_clients(site) == []


def test_export_opt_outs_are_honoured(production):
    edit_all(production, "powerscale_exports", lambda v: v[0].update(map_root="root", no_root_squash=True))
    edit_all(production, "powerscale_exports", lambda v: v[1].update(clients=["0.0.0.0/0"], open_to_all_clients=True))
    assert rules.rule_export_exposure(production) == []
    assert rules.rule_schema(production) == []


def test_addresses_of_the_other_ip_version_are_judged_not_compared(production):
    """IPv4 and IPv6 addresses do not order (TypeError): an IPv6 API host, pool NIC or service address beside the
    IPv4 SmartConnect ranges is outside them, and preflight reports the site instead of crashing (found by mypy)."""
    site = copy.deepcopy(production)
    set_all(site, "powerscale_api_host", "2001:db8::20")
    edit_all(site, "powerscale_smartconnect", lambda v: v.update(service_address="2001:db8::21"))
    nic(site, "f800-4", 1).update(address="2001:db8::44/64")
    found = {(p.host, p.variable) for p in rules.evaluate(site)}
    assert ("f800-4", "storage_nics[1].address") in found
    assert ("all", "powerscale_smartconnect.service_address") in found
    assert not [p for p in rules.rule_powerscale_access(site) if "SmartConnect pool" in p.problem]


def test_smartconnect_mode_passes_when_enabled(production):
    site = copy.deepcopy(production)
    set_all(site, "nfs_server_mode", "smartconnect")
    assert [p for p in rules.rule_server_mapping(site) if p.severity == ERROR] == []


def test_ngc_driver_table_forward_compatibility():
    from ansible.module_utils.ngc_driver_support import judge

    pytorch = "nvcr.io/nvidia/pytorch"
    assert judge(pytorch, "24.05-py3", "550.54.15").ok is True          # native
    assert judge(pytorch, "24.05-py3", "535.183.01").ok is True         # R535 >= 535.86, forward compatibility
    assert judge(pytorch, "24.05-py3", "535.54.03").ok is False         # R535 below 535.86
    assert judge(pytorch, "24.05-py3", "450.51.06").ok is False         # the 2020 pin
    assert judge(pytorch, "20.06-py3", "450.51.06").ok is True
    assert judge("nvcr.io/nvidia/mxnet", "20.06-py3", "450.51.06").ok is True
    assert judge(pytorch, "25.01-py3", "535.183.01").ok is None         # not in the table: not guessed
    assert judge("nvcr.io/site/tool", "1.0", "450.51.06").ok is True    # not a framework release tag


def test_ngc_driver_not_judged_on_nodes_without_gpus(lab):
    set_all(lab, "dgx_nvidia_driver_version", "450.51.06")
    assert rules.rule_ngc_driver(lab) == []


@pytest.mark.parametrize("option", ["noatime", "_netdev", "actimeo=60", "lookupcache=positive", "sec=sys", "nofail",
                                    "x-systemd.makefs", "x-systemd.growfs"])
def test_known_extra_options_pass(option):
    assert dgx_nfs.extra_option_problem(option) is None


@pytest.mark.parametrize("option", ["soft", "vers=4.1", "rsize=65536", "hard", "turbo", "noatime,nodev", ""])
def test_bad_extra_options_fail(option):
    assert dgx_nfs.extra_option_problem(option) is not None


def test_collapse_groups_and_table():
    rows = [rules.Problem(h, "dgx_model", "x", "bad", "fix it") for h in ("dgx01", "dgx02")]
    collapsed = rules.collapse(rows, {"dgx": ["dgx01", "dgx02"]})
    assert [p.host for p in collapsed] == ["dgx"]
    table = table_of.render_table([p.as_dict() for p in collapsed])
    lines = table.splitlines()
    assert lines[0] == "preflight: 1 error(s), 0 warning(s)"
    assert lines[1].split(" | ") == ["host", "variable ", "value", "problem   ", "fix"]
    assert "ERROR: bad" in lines[3] and lines[3].startswith("dgx ")
    assert table_of.render_table([]).endswith("every rule passed")


def test_show_truncates_and_marks_missing():
    assert table_of.show(schema.MISSING) == "(not set)"
    assert len(table_of.show("x" * 200)) == 60
    assert table_of.show({"a": 1}) == '{"a":1}'


@pytest.mark.parametrize(
    ("spec", "good", "bad"),
    [
        (schema.Int(1, 16), 8, 17),
        (schema.Int(1, 16), 1, True),
        (schema.Bool(), True, "yes"),
        (schema.Enum(choices=("tcp", "rdma")), "tcp", "udp"),
        (schema.IP(), "192.0.2.1", "192.0.2.300"),
        (schema.Interface(), "198.51.100.11/24", "198.51.100.0/24"),
        (schema.Network(), "198.51.100.0/24", "198.51.100.1/24"),
        (schema.Version(), "5.3", 5.3),
        (schema.AbsPath(prefix="/ifs/"), "/ifs/data", "/data"),
        (schema.HostOrIP(allow_port=True), "registry.lab:15000", "bad host:1"),
        (schema.ListOf(item=schema.Int(), min_len=1), [1], []),
        (schema.Dict(fields={"a": schema.Field(schema.Int())}), {"a": 1}, {"a": 1, "b": 2}),
        (schema.Number(min=0, max=1, min_exclusive=True), 0.9, 0),
        (schema.SWITCH_PORT, "swp12s3", "swp0"),
    ],
)
def test_schema_specs(spec, good, bad):
    assert spec.check(good, "v") == []
    assert spec.check(bad, "v") != []


@pytest.mark.parametrize("var", schema.VARIABLES, ids=lambda v: v.name)
def test_every_variable_rejects_a_wrong_type_with_a_fix(var):
    findings = var.spec.check(object(), var.name)
    assert findings and all(f.fix and f.problem for f in findings)


def test_the_plugin_hands_the_rules_the_validation_metric_definitions(tmp_path):
    """plugins/action/preflight_inventory.py reads validation/metrics.yml through validation/metrics.py (the one
    reader) for rule_acceptance; without the validation package beside the plugins it hands none."""
    defs = action_plugin().metric_definitions()
    assert defs is not None and defs["fio_node_read_MBps"] == {"stage": "fio", "unit": "MB/s", "threshold": True}
    assert defs["fio_array_over_client"]["threshold"] is False
    assert action_plugin().metric_definitions(tmp_path) is None
    site = load_site("inventories/production")
    assert site.hosts("dgx") and site.metrics == defs
