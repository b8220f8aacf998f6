"""Sites for the scale tests: the lab inventory with a DGX left out (the site before the scale-out)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def lab_without(tmp_path: Path, node: str) -> Path:
    """inventories/lab with `node` left out of hosts.yml and nfs_server_map (the site before the scale-out)."""
    site = tmp_path / "lab"
    site.mkdir()
    hosts = yaml.safe_load((ROOT / "inventories/lab/hosts.yml").read_text())
    del hosts["all"]["children"]["dgx"]["hosts"][node]
    hosts["all"]["vars"]["lab_run_dir"] = str(ROOT / "lab" / ".run")
    (site / "hosts.yml").write_text(yaml.safe_dump(hosts, sort_keys=False))
    gv = site / "group_vars" / "all"
    gv.mkdir(parents=True)
    for f in (ROOT / "inventories/lab/group_vars/all").iterdir():
        data = yaml.safe_load(f.read_text())
        if isinstance(data, dict) and node in (data.get("nfs_server_map") or {}):
            del data["nfs_server_map"][node]
            (gv / f.name).write_text(yaml.safe_dump(data, sort_keys=False))
        else:
            (gv / f.name).write_text(f.read_text())
    return site
