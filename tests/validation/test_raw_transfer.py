"""A stage's raw outputs travel as one archive per node (validation/runners/common.py pack/unpack, used by
roles/validate/tasks/bring_raw.yml): every file arrives byte for byte where the per-file fetch put it,
and the control node refuses an archive that would write outside the run directory."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile

import pytest
from conftest import ROOT

COMMON = ROOT / "validation" / "runners" / "common.py"


def _common(*args: str) -> dict:
    proc = subprocess.run([sys.executable, str(COMMON), *args], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_pack_then_unpack_lands_every_file_under_its_stage_and_reroutes_sysinfo(tmp_path):
    src = tmp_path / "node" / "nccl"
    files = {"all/meta.json": b'{"samples": []}', "all/out-r1.log": b"# nccl-tests\n" * 50,
             "sysinfo/dgx01/ibstat.txt": b"CA 'mlx5_0'\n", "all/half-written.tmp": b"x"}
    for rel, data in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(data)
    archive = src / "raw-outputs.tar.tmp"
    assert _common("pack", str(src), str(archive), "nccl", "sysinfo=sysinfo")["files"] == 3

    raw = tmp_path / "run" / "raw"
    raw.mkdir(parents=True)
    incoming = raw / ".incoming-nccl-dgx01.tar"
    archive.rename(incoming)
    assert _common("unpack", str(incoming), str(raw))["files"] == 3
    assert (raw / "nccl/all/meta.json").read_bytes() == files["all/meta.json"]
    assert (raw / "nccl/all/out-r1.log").read_bytes() == files["all/out-r1.log"]
    assert (raw / "sysinfo/dgx01/ibstat.txt").read_bytes() == files["sysinfo/dgx01/ibstat.txt"]
    assert not (raw / "nccl/all/half-written.tmp").exists(), "*.tmp files are work in progress, never results"
    assert not incoming.exists(), "the archive is removed once unpacked"


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
    proc = subprocess.run([sys.executable, str(COMMON), "unpack", str(archive), str(dest)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode != 0 and "refusing" in proc.stderr, proc.stderr
    assert not (dest / "nccl" / "ok.txt").exists(), "nothing is written when one member is refused"
    assert not (tmp_path / "escaped.txt").exists()
