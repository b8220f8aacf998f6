"""library/dgx_in_use.py's reading of a live node: mountinfo (proc(5) format, escapes), the processes on a mounted
device (a real child process holding a file open here), and the container engines, failing closed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import dgx_in_use
import pytest

# proc(5) mountinfo: the kernel documentation's example line, then an NFS mount as Linux 5.x prints it.
MOUNTINFO = """\
36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
25 1 0:22 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
412 25 0:53 / /mnt/training rw,noatime shared:240 - nfs 198.51.100.21:/ifs/data/training rw,vers=3,nconnect=4
413 25 0:54 / /mnt/scratch rw,noatime shared:241 - nfs 198.51.100.21:/ifs/data/scratch rw,vers=3
414 25 0:55 / /mnt/with\\040space rw - tmpfs tmpfs rw
"""


def test_mountinfo_gives_the_mount_id_and_device_of_each_mount_point():
    found = dgx_in_use.mounted_points(MOUNTINFO, ["/mnt/training", "/mnt/scratch/", "/mnt/absent"])
    assert [(m["mount_point"], m["mount_id"], m["device"], m["fstype"]) for m in found] == [
        ("/mnt/scratch", 413, "0:54", "nfs"), ("/mnt/training", 412, "0:53", "nfs")]
    assert found[1]["source"] == "198.51.100.21:/ifs/data/training"


def test_mountinfo_escapes_are_decoded():
    assert [m["mount_point"] for m in dgx_in_use.mounted_points(MOUNTINFO, ["/mnt/with space"])] == ["/mnt/with space"]


def test_the_topmost_mount_of_a_point_counts():
    text = MOUNTINFO + "500 412 0:60 / /mnt/training rw - nfs 198.51.100.22:/ifs/data/training rw\n"
    (found,) = dgx_in_use.mounted_points(text, ["/mnt/training"])
    assert found["mount_id"] == 500


def test_a_process_holding_a_file_on_the_device_is_busy(tmp_path):
    st = os.stat(tmp_path)
    mounted = [{"mount_point": str(tmp_path), "device": f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"}]
    held = tmp_path / "held"
    held.write_text("x")
    child = subprocess.Popen([sys.executable, "-c", f"f = open({str(held)!r}); import time; time.sleep(60)"],
                             cwd="/")
    try:
        for _ in range(100):
            busy = dgx_in_use.busy_processes(mounted, pids=[str(child.pid)])
            if any(b["pid"] == child.pid for b in busy):
                break
            time.sleep(0.05)
        assert any(b["pid"] == child.pid and b["mount_point"] == str(tmp_path) for b in busy), busy
    finally:
        child.kill()
        child.wait()


def test_a_process_whose_files_cannot_be_read_fails_closed(monkeypatch):
    real = os.listdir

    def listdir(path):
        if str(path).endswith("/fd"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(dgx_in_use.os, "listdir", listdir)
    with pytest.raises(PermissionError, match="run the probe as root"):
        dgx_in_use.busy_processes([{"mount_point": "/mnt/training", "device": "0:53"}], pids=[str(os.getpid())])


def test_nothing_mounted_means_no_process_to_look_for():
    assert dgx_in_use.busy_processes([]) == []


def _run(rc: int, out: str = "", err: str = ""):
    return lambda argv, **kw: SimpleNamespace(returncode=rc, stdout=out, stderr=err)


def test_running_containers_of_each_installed_engine():
    which = {"docker": "/usr/bin/docker"}.get
    assert dgx_in_use.running_containers(which, _run(0, "0123abcd\n\n4567ef01\n")) == ["docker:0123abcd",
                                                                                       "docker:4567ef01"]
    assert dgx_in_use.running_containers(lambda name: None, _run(0)) == []


def test_an_engine_that_does_not_answer_fails_closed():
    with pytest.raises(RuntimeError, match="docker ps -q failed"):
        dgx_in_use.running_containers({"docker": "/usr/bin/docker"}.get,
                                      _run(1, err="Cannot connect to the Docker daemon"))
