"""files method without a switch: render the role's templates from the inventories, check them with the
Python checker, and merge them into interfaces files the way cumulus_interfaces does on the switch."""

from __future__ import annotations

import jinja2
import pytest
import yaml
from ansible.module_utils.cumulus_fabric import derive_plan
from ansible.module_utils.cumulus_ifupdown import BEGIN_MARK, END_MARK, check, merge, parse, unknown_options

from validation.inventory_layers import group_vars

from .inventory_data import ROOT, settings_for

TEMPLATES = ROOT / "roles/sn3700v/templates"

CUMULUS_DEFAULT = """\
# This file describes the network interfaces available on your system
# and how to activate them. For more information, see interfaces(5).

source /etc/network/interfaces.d/*.intf

# The loopback network interface
auto lo
iface lo inet loopback

# The primary network interface
auto eth0
iface eth0
    address 192.0.2.31/24
    gateway 192.0.2.1
    vrf mgmt

auto mgmt
iface mgmt
    address 127.0.0.1/8
    address ::1/128
    vrf-table auto
"""


def render(template: str, inventory: str, switch: str, **overrides) -> str:
    plan, problems = derive_plan(switch, settings_for(inventory, switch, **overrides))
    assert problems == []
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), trim_blocks=True,
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    defaults = yaml.safe_load((ROOT / "roles/sn3700v/defaults/main.yml").read_text())
    # what tasks/files.yml's set_fact makes of storage_fabric_port_fec (the production inventory's map)
    site = group_vars(ROOT / "inventories/production", "storage_fabric")
    fec = {int(k): str(v) for k, v in site["storage_fabric_port_fec"].items()}
    return env.get_template(template).render(
        sn3700v_plan=plan.as_dict(), inventory_hostname=switch, sn3700v_fec_by_speed=fec,
        sn3700v_clag_backup_vrf=defaults["sn3700v_clag_backup_vrf"])


def stanza(text: str, name: str):
    return next(s for s in parse(text).stanzas() if s.name == name)


@pytest.mark.parametrize(("inventory", "switch"), [("production", "sn3700v01"), ("production", "sn3700v02"),
                                                    ("lab", "sn3700v01")])
def test_rendered_stanzas_pass_the_check(inventory, switch):
    text = render("interfaces.managed.j2", inventory, switch)
    assert check(text) == [] and unknown_options(text) == []
    assert check(merge(CUMULUS_DEFAULT, text, []).text) == []


def test_production_stanzas_carry_the_inventory():
    text = render("interfaces.managed.j2", "production", "sn3700v01")
    swp1 = stanza(text, "swp1")
    assert swp1.option("alias") == ["dgx01 enp225s0f0"]
    assert swp1.option("mtu") == ["9216"] and swp1.option("link-speed") == ["100000"]
    assert swp1.option("bridge-access") == ["100"]
    # a forced speed always comes with its FEC (autoneg off + FEC auto leaves a Spectrum port down)
    assert swp1.option("link-autoneg") == ["off"] and swp1.option("link-fec") == ["rs"]
    assert stanza(text, "swp17").option("link-speed") == ["40000"]
    assert stanza(text, "swp17").option("link-fec") == ["off"]
    assert stanza(text, "peerlink").option("bond-slaves") == ["swp31 swp32"]
    clag = stanza(text, "peerlink.4094")
    assert clag.option("clagd-backup-ip") == ["192.0.2.32 vrf mgmt"] and clag.option("clagd-priority") == ["1000"]
    assert clag.option("clagd-sys-mac") == ["44:38:39:ff:40:94"] and clag.option("clagd-peer-ip") == ["linklocal"]
    bridge = stanza(text, "br_default")
    assert bridge.option("bridge-ports") == ["swp1 swp2 swp17 swp18 swp19 swp20 peerlink"]
    assert bridge.option("bridge-vids") == ["100"] and bridge.option("bridge-vlan-aware") == ["yes"]


def test_lab_stanzas_set_no_speed_on_virtual_ports():
    text = render("interfaces.managed.j2", "lab", "sn3700v01")
    assert "link-speed" not in text and "clagd" not in text
    assert stanza(text, "br_default").option("bridge-ports") == ["swp1 swp2 swp9"]


def test_merge_keeps_management_and_adopts_loopback():
    ours = render("interfaces.managed.j2", "production", "sn3700v01")
    result = merge(CUMULUS_DEFAULT, ours, ["lo"])
    assert result.adopted == ["lo"]
    merged = result.text
    for kept in ("source /etc/network/interfaces.d/*.intf", "gateway 192.0.2.1", "vrf-table auto",
                 "iface mgmt", "# The primary network interface"):
        assert kept in merged
    assert merged.count("iface lo inet loopback") == 1
    assert stanza(merged, "lo").option("address") == ["192.0.2.251/32"]
    assert merged.index(BEGIN_MARK) < merged.index("iface swp1") < merged.index(END_MARK)
    # idempotent: merging the same stanzas into the result changes nothing
    assert merge(merged, ours, ["lo"]).text == merged


def test_merge_carries_foreign_options_of_an_adopted_stanza():
    existing = CUMULUS_DEFAULT.replace("iface lo inet loopback", "iface lo inet loopback\n    address 10.0.0.1/32")
    ours = render("interfaces.managed.j2", "production", "sn3700v01")
    result = merge(existing, ours, ["lo"])
    assert result.carried == {"lo": ["address 10.0.0.1/32"]}
    assert set(stanza(result.text, "lo").option("address")) == {"192.0.2.251/32", "10.0.0.1/32"}


def test_port_removed_from_the_inventory_leaves_the_region_but_foreign_stanzas_stay():
    first = merge(CUMULUS_DEFAULT + "\nauto swp40\niface swp40\n    alias site's own port\n",
                  render("interfaces.managed.j2", "production", "sn3700v01"), [])
    settings = settings_for("production", "sn3700v01")
    nics = settings["nics_by_host"]
    nics["dgx03"] = []  # dgx03 was recabled elsewhere
    second = merge(first.text, render("interfaces.managed.j2", "production", "sn3700v01", nics_by_host=nics), [])
    assert "iface swp2\n" not in second.text  # was ours, no longer in the inventory
    assert "iface swp40" in second.text and "site's own port" in second.text
    assert second.text.count(BEGIN_MARK) == 1 and check(second.text) == []


def test_checker_catches_what_a_template_bug_would_break():
    bad = """auto swp1\niface swp1\n    mtu 9999\n    bridge-access 200\n\nauto br_default\niface br_default
    bridge-ports swp1 swp7\n    bridge-vids 100\n\niface swp1\n"""
    problems = check(bad)
    assert "iface swp1 is defined 2 times" in problems
    assert "iface swp1: mtu 9999 is outside 552..9216" in problems
    assert "iface br_default: bridge port swp7 has no iface stanza" in problems
    assert "iface swp1: access VLAN 200 is not in br_default's bridge-vids" in problems


def test_frr_block_sets_router_id_from_the_loopback():
    text = render("frr.block.j2", "production", "sn3700v02")
    assert "hostname sn3700v02" in text and "ip router-id 192.0.2.252" in text


def test_option_names_ifupdown2_would_let_through_are_caught():
    assert unknown_options("auto swp1\niface swp1\n    link-sped 100000\n    mtu 9216\n") == [
        "iface swp1: unknown option link-sped"]
