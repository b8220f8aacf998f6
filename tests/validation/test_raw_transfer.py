"""A stage's raw outputs travel as one archive per node (roles/validate/tasks/bring_raw.yml: the raw_outputs
action plugin, plugins/action/raw_outputs.py, reads validation/runners/common.py pack-base64 from one shell command
on the node): every file arrives byte for byte under its stage in the run directory, and the control node refuses an
archive that would write outside the run directory."""

from __future__ import annotations

import importlib.util
import io
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, play_on_this_machine

COMMON = ROOT / "validation" / "runners" / "common.py"
BIN = Path(sys.executable).parent


def _common_module():
    spec = importlib.util.spec_from_file_location("runners_common", COMMON)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _bring(tmp_path: Path, src: Path, raw: Path, arcroot: str, reroute: list[str], remove: str = "") -> dict:
    """The role's task file, run by ansible-playbook against this machine as the node (connection local)."""
    play = [{"hosts": "localhost", "gather_facts": False, "vars": {
        "ansible_python": {"executable": sys.executable}, "validate_raw_src": str(src),
        "validate_raw_runners": str(COMMON.parent), "validate_raw_arcroot": arcroot, "validate_raw_reroute": reroute,
        **({"validate_raw_remove": remove} if remove else {})},
        "tasks": [{"ansible.builtin.set_fact": {"validate_run": {"dir": str(raw.parent)}}},
                  {"ansible.builtin.include_tasks": str(ROOT / "roles/validate/tasks/bring_raw.yml")}]}]
    tasks = play_on_this_machine(tmp_path, play)
    return {"rc": tasks[-1]["rc"], "result": tasks[-1]["hosts"]["localhost"]}


def test_one_command_brings_every_file_under_its_stage_and_reroutes_sysinfo(tmp_path):
    src = tmp_path / "node" / "nccl"
    files = {"all/meta.json": b'{"samples": []}', "all/out-r1.log": b"# nccl-tests\n" * 50,
             "sysinfo/dgx01/ibstat.txt": b"CA 'mlx5_0'\n", "all/half-written.tmp": b"x", "all/w.part": b"y",
             "all/binary.bin": bytes(range(256)) * 40}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    raw = tmp_path / "run" / "raw"
    got = _bring(tmp_path, src, raw, "nccl", ["sysinfo=sysinfo"])
    assert got["rc"] == 0, got
    assert got["result"]["files"] == 4 and got["result"]["changed"] is False
    assert (raw / "nccl/all/meta.json").read_bytes() == files["all/meta.json"]
    assert (raw / "nccl/all/out-r1.log").read_bytes() == files["all/out-r1.log"]
    assert (raw / "nccl/all/binary.bin").read_bytes() == files["all/binary.bin"]
    assert (raw / "sysinfo/dgx01/ibstat.txt").read_bytes() == files["sysinfo/dgx01/ibstat.txt"]
    assert not (raw / "nccl/all/half-written.tmp").exists(), "*.tmp files are work in progress, never results"
    assert not (raw / "nccl/all/w.part").exists()
    assert [p.name for p in raw.iterdir() if p.name.startswith(".incoming")] == [], "the archive is removed"


def test_a_node_that_cannot_pack_fails_the_task_naming_it(tmp_path):
    raw = tmp_path / "run" / "raw"
    got = _bring(tmp_path, tmp_path / "no" / "such" / "dir" / "file-not-dir", raw, "fio", [])
    # os.walk of a missing directory yields nothing: an empty stage is no error, and nothing lands
    assert got["rc"] == 0 and got["result"]["files"] == 0
    src = tmp_path / "node" / "fio"
    src.mkdir(parents=True)
    (src / "r1.json").write_text("{}")
    got = _bring(tmp_path, src, raw, "fio", ["broken-route"])  # not PART=ROOT: common.py fails on the node
    assert got["rc"] != 0 and got["result"]["failed"] is True
    assert got["result"]["msg"].startswith("localhost: packing ") and "failed (rc 1)" in got["result"]["msg"]


def test_the_stage_directory_is_removed_in_the_same_command_once_packed(tmp_path):
    work = tmp_path / "node" / "validation" / "run1"
    src = work / "fio"
    (src / "node-dgx01").mkdir(parents=True)
    (src / "node-dgx01" / "r1.json").write_text('{"jobs": []}')
    raw = tmp_path / "run" / "raw"
    got = _bring(tmp_path, src, raw, "fio", [], remove=str(work))
    assert got["rc"] == 0 and got["result"]["files"] == 1, got
    assert (raw / "fio/node-dgx01/r1.json").read_text() == '{"jobs": []}'
    assert not work.exists(), "the run's working directory on the node is gone once its outputs arrived"


def test_a_removal_refused_fails_the_task_and_leaves_the_outputs_on_the_node(tmp_path):
    src = tmp_path / "node" / "scratch" / "fio"  # no 'validation' part: common.remove_tree refuses it
    src.mkdir(parents=True)
    (src / "r1.json").write_text("{}")
    raw = tmp_path / "run" / "raw"
    got = _bring(tmp_path, src, raw, "fio", [], remove=str(src))
    assert got["rc"] != 0 and got["result"]["failed"] is True
    assert "not a validation directory" in got["result"]["msg"], got["result"]["msg"]
    assert (src / "r1.json").exists(), "nothing is removed, and the outputs stay where they were"
    assert not (raw / "fio").exists(), "no half transfer: nothing is printed when the cleanup is refused"


@pytest.mark.parametrize("name, kind", [("../../escaped.txt", tarfile.REGTYPE), ("/etc/escaped.txt", tarfile.REGTYPE),
                                        ("nccl/link", tarfile.SYMTYPE)])
def test_unpack_refuses_members_outside_the_run_directory_or_not_plain_files(tmp_path, name, kind):
    archive = tmp_path / "bad.tar"
    with tarfile.open(archive, "w") as tar:
        ok = tarfile.TarInfo("nccl/ok.txt")
        ok.size = 2
        tar.addfile(ok, io.BytesIO(b"ok"))
        bad = tarfile.TarInfo(name)
        bad.type = kind
        if kind == tarfile.SYMTYPE:
            bad.linkname = "/etc/passwd"
            tar.addfile(bad)
        else:
            bad.size = 3
            tar.addfile(bad, io.BytesIO(b"bad"))
    dest = tmp_path / "run" / "raw"
    dest.mkdir(parents=True)
    with pytest.raises(SystemExit, match="refusing"):
        _common_module().unpack_tree(str(archive), str(dest))
    assert not (dest / "nccl" / "ok.txt").exists(), "nothing is written when one member is refused"
    assert not (tmp_path / "escaped.txt").exists()
