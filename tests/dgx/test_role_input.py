"""The DGX roles refuse bad input before they change anything (run for real with ansible-playbook, locally).

Every host is the local machine in --check mode; the first task of each role must fail with a message that
names the host, the variable, the value and the fix, and no task may have run before it.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dgx_testlib import ROOT, load_group_vars

NFS = load_group_vars("lab", "nfs_client")
NGC = load_group_vars("lab", "ngc")
DGX = load_group_vars("lab", "dgx")


def _bad_mounts(**changes) -> list[dict]:
    mounts = copy.deepcopy(NFS["nfs_mounts"])
    mounts[0].update(changes)
    return mounts


CASES = {
    "dgx_nfs": {
        # one defect per host: an unknown mount option, soft for training data, a server not in the inventory
        "dgx01": {"nfs_mounts": _bad_mounts(extra_options=["noatime", "turbo"])},
        "dgx02": {"nfs_mounts": _bad_mounts(hard=False)},
        "dgx03": {"nfs_server_map": {"dgx03": {"node": "isilon99", "nic": "storage0"}}},
    },
    "ngc": {
        "dgx01": {"ngc_images": [{"name": "nvcr.io/nvidia/pytorch", "tag": "latest", "digest": ""}]},
        "dgx02": {"ngc_images": [{"name": "nvcr.io/nvidia/pytorch", "tag": "24.05-py3", "digest": "sha256:1"}]},
        "dgx03": {"ngc_mirror": {"enabled": True, "registry": "https://registry.lab", "username": "lab"}},
    },
    "dgx_host": {
        "dgx01": {"dgx_model": "dgx-h100"},
        "dgx02": {"storage_nics": []},
        "dgx03": {"dgx_model": "dgx-a100-40g"},
    },
}
# The plan modules fail with the one table (module_utils/inventory_problem.render_table), its columns padded:
# the output is compared with each run of blanks before a column separator folded to one.
EXPECTED = {
    "dgx_nfs": {"dgx01": "unknown mount option 'turbo'", "dgx02": "training data must not be soft-mounted",
                "dgx03": "dgx03 | nfs_server_map.dgx03.node | isilon99 | ERROR: is not a host of the powerscale group"},
    "ngc": {"dgx01": "dgx01 | ngc_images[0].tag | latest |", "dgx02": "dgx02 | ngc_images[0].digest | sha256:1 |",
            "dgx03": "dgx03 | ngc_mirror.registry | https://registry.lab |"},
    # dgx_host's check is preflight's rules (schema, node_model) through roles/preflight/tasks/rules.yml: the same table
    "dgx_host": {"dgx01": "dgx01 | dgx_model | dgx-h100 | ERROR: is not a key of dgx_models",
                 "dgx02": "dgx02 | storage_nics | [] | ERROR: needs at least 1 entry",
                 "dgx03": "dgx03 | dgx_model | dgx-a100-40g | ERROR: is not a key of dgx_models"},
}
FIRST_TASK = {
    "dgx_nfs": "dgx_nfs : Plan and check the NFS mounts of this DGX (controller side, before any change)",
    "ngc": "ngc : Plan and check the NGC images (controller side, before any change)",
    "dgx_host": "Check the readiness expectations of this node's model (preflight's rules)",  # include_role: no prefix
}
# The tasks of a check that is preflight's rules phase (include_role preflight, preflight_phase: rules), after the
# including task; the last one fails. None of them changes anything.
RULES_PHASE = ("preflight : Validating arguments against arg spec", "preflight : Run the preflight phase rules",
               "preflight : Preflight | evaluate ", "preflight : Preflight | stop before any change")
ROLES_CHECKED_BY_PREFLIGHT = {"dgx_host"}


def _inventory(role: str) -> dict:
    common = {**NFS, **NGC, **DGX, "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
              "dgx_model": "lab-vm", "powerscale_exports": load_group_vars("lab", "exports")["powerscale_exports"],
              "ngc_api_key": "not-a-real-key", "ngc_mirror_password": "not-a-real-password"}
    common["ngc_mirror"] = {**NGC["ngc_mirror"], "ca_path": ""}
    hosts = {name: {"storage_nics": [{"name": "lo", "address": "127.0.0.1/8", "mtu": 65536}], **values}
             for name, values in CASES[role].items()}
    return {"all": {"vars": common, "children": {
        "dgx": {"hosts": hosts},
        "powerscale": {"hosts": {"powerscale01": {"storage_nics": [{"name": "storage0",
                                                                   "address": "198.51.100.21/24"}]}}},
    }}}


@pytest.mark.parametrize("role", sorted(CASES))
def test_role_refuses_bad_input_before_any_change(role, tmp_path):
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump(_inventory(role)))
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"name": "bad input", "hosts": "dgx", "gather_facts": False,
                                         "roles": [{"role": role}]}]))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(ROOT / "roles"), "ANSIBLE_LIBRARY": str(ROOT / "library"),
           "ANSIBLE_MODULE_UTILS": str(ROOT / "module_utils"), "ANSIBLE_CACHE_PLUGIN": "memory",
           "ANSIBLE_LOCALHOST_WARNING": "0", "ANSIBLE_NOCOLOR": "1"}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(playbook), "--check"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=180)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-4000:]
    folded = re.sub(r" +\|", " |", out)
    for host, fragment in EXPECTED[role].items():
        assert f"{host}" in out and fragment in folded, f"{host}: {fragment!r} not in output:\n{out[-4000:]}"
    chain = RULES_PHASE if role in ROLES_CHECKED_BY_PREFLIGHT else ()
    recap = out[out.index("PLAY RECAP"):]
    for host in CASES[role]:
        # ok: only the role's argument_specs validation and the check's own steps, which change nothing
        line = next(li for li in recap.splitlines() if li.startswith(host))
        assert "changed=0" in line and "failed=1" in line, line
        ok_count = int(line.split("ok=")[1].split()[0])
        assert ok_count <= 1 + len(chain), f"{host}: {ok_count} task(s) ran before the input was checked:\n{out[-3000:]}"
    tasks = re.findall(r"^TASK \[([^\]]+)\]", out, re.M)
    assert len(tasks) == 2 + len(chain) and tasks[0].startswith(f"{role} : Validating arguments against arg spec"), tasks
    assert tasks[1] == FIRST_TASK[role], tasks
    assert all(t.startswith(step) for t, step in zip(tasks[2:], chain, strict=True)), tasks


def test_ngc_role_shows_no_secret_even_verbose_and_failing(tmp_path):
    """ngc in --check -vvv on this machine: whatever fails here (no docker service or daemon, no requests), the
    API key and the mirror password must appear nowhere in the output."""
    key, password = "NGC-KEY-must-not-leak-5d1e", "MIRROR-PW-must-not-leak-9c3a"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"dgx": {"hosts": {"dgx01": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump([{"name": "leak probe", "hosts": "dgx", "gather_facts": False,
                                         "roles": [{"role": "ngc"}]}]))
    extra = {**NGC, "ngc_mirror": {"enabled": False}, "ngc_api_key": key, "ngc_mirror_password": password,
             "ngc_docker_packages": [], "ngc_python_packages": []}
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(ROOT / "roles"), "ANSIBLE_LIBRARY": str(ROOT / "library"),
           "ANSIBLE_MODULE_UTILS": str(ROOT / "module_utils"), "ANSIBLE_CACHE_PLUGIN": "memory",
           "ANSIBLE_NOCOLOR": "1"}
    extra_file = tmp_path / "extra.yml"
    extra_file.write_text(yaml.safe_dump(extra))
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
                           str(playbook), "--check", "-vvv", "-e", f"@{extra_file}"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    # The secret is templated at least by the argument_specs validation and by preflight's secrets rule; the
    # login task is reached where this machine has a docker service (check mode does not start it).
    # (preflight's secrets rule, the role's own check when it runs alone, templates them: roles/preflight/tasks/rules.yml)
    assert "TASK [preflight : Preflight | evaluate this role's rules secrets]" in out, out[-3000:]
    assert key not in out and password not in out
