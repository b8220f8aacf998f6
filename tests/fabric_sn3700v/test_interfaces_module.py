"""cumulus_interfaces (the agentless action plugin, run ad hoc over the local connection) on a temporary interfaces
file: the switch's own checker is stood in for by small commands, since ifupdown2 belongs on the switch, not on
the control node."""

from __future__ import annotations

from .conftest import run_action as run_module
from .test_files_render import CUMULUS_DEFAULT, render


def test_install_noop_check_and_rejections(tmp_path):
    path = tmp_path / "interfaces"
    path.write_text(CUMULUS_DEFAULT)
    (tmp_path / "interfaces.d").mkdir()
    (tmp_path / "interfaces.d" / "site.intf").write_text("auto swp40\niface swp40\n    alias site port\n")
    stanzas = render("interfaces.managed.j2", "production", "sn3700v01")
    owned = ["lo", "swp1", "swp2", "br_default"]
    main = CUMULUS_DEFAULT.replace("source /etc/network/interfaces.d/*.intf", f"source {tmp_path}/interfaces.d/*.intf")
    path.write_text(main)
    common = {"path": str(path), "stanzas": stanzas, "owned": owned, "backup": False}
    ok_check = "test -s %s"
    reject = "sh -c 'echo \"error: %s: line 12: swp1: unsupported attribute link-sped\" >&2; exit 1'"

    site = tmp_path / "interfaces.d" / "site.intf"

    check = run_module("cumulus_interfaces", {**common, "validate": ok_check}, check=True)
    assert check["changed"] and "+    bridge-access 100" in _diff_text(check)
    assert path.read_text() == main, "check mode wrote the file"

    rejected = run_module("cumulus_interfaces", {**common, "validate": reject})
    assert rejected["failed"]
    assert "ifupdown2 rejected the new interfaces file" in rejected["msg"]
    assert "unsupported attribute link-sped" in rejected["msg"]
    assert path.read_text() == main, "a rejected candidate replaced the file"

    first = run_module("cumulus_interfaces", {**common, "validate": ok_check})
    assert first["changed"] and first["adopted"] == ["lo"]
    assert not run_module("cumulus_interfaces", {**common, "validate": ok_check})["changed"]
    text = path.read_text()
    assert "gateway 192.0.2.1" in text and "iface swp1" in text and "vrf-table auto" in text
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    assert not list(tmp_path.glob(".interfaces.*")), "a candidate was left behind"
    assert len(list(tmp_path.glob("interfaces.*~"))) == 0, "backup: false made a copy"

    # a template typo that ifupdown2's syntax check would let through
    typo = run_module("cumulus_interfaces", {**common, "stanzas": stanzas.replace("bridge-access", "bridge-acess"),
                                             "validate": ok_check})
    assert typo["failed"] and "unknown option bridge-acess" in typo["msg"]

    # an interfaces.d file that defines an interface the role owns: refused, nothing written
    site.write_text("auto swp1\niface swp1\n")
    conflict = run_module("cumulus_interfaces", {**common, "validate": ok_check})
    assert conflict["failed"] and "site.intf defines iface swp1" in conflict["msg"]
    assert path.read_text() == text



def _diff_text(result: dict) -> str:
    diffs = result.get("diff", [])
    diffs = diffs if isinstance(diffs, list) else [diffs]
    before = "".join(d.get("before", "") for d in diffs)
    after = "".join(d.get("after", "") for d in diffs)
    return "\n".join(f"+{line}" for line in after.splitlines() if line not in before.splitlines())
