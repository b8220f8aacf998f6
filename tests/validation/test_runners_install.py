"""The run's runners reach a node in one shell command (roles/validate/tasks/node.yml: the runners_install action
plugin, plugins/action/runners_install.py, sends the run's runners.tar on the command's stdin): every runner arrives
byte for byte, mode 0755, and an archive that is not plain top-level files is refused before anything is sent."""

from __future__ import annotations

import io
import stat
import sys
import tarfile
from pathlib import Path

import pytest
from conftest import ROOT, play_on_this_machine

BIN = Path(sys.executable).parent
RUNNERS = sorted((ROOT / "validation" / "runners").glob("*.py"))


def _install(tmp_path: Path, archive: Path, dest: Path) -> dict:
    """node.yml's install task, run by ansible-playbook against this machine as the node (connection local)."""
    play = [{"hosts": "localhost", "gather_facts": False, "vars": {"validate_runners_dir": str(dest)},
             "tasks": [{"ansible.builtin.set_fact": {"validate_run": {"dir": str(archive.parent)}}},
                       {"ansible.builtin.include_tasks": str(ROOT / "roles/validate/tasks/node.yml")}]}]
    tasks = play_on_this_machine(tmp_path, play)
    done = [t for t in tasks if t["task"]["name"].startswith("Validate | install the runners")]
    return {"rc": tasks[0]["rc"], "result": done[0]["hosts"]["localhost"] if done else None}


def _pack(path: Path, members: dict[str, bytes], link: str = "") -> Path:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
        if link:
            info = tarfile.TarInfo(link)
            info.type = tarfile.SYMTYPE
            info.linkname = "/etc/passwd"
            tar.addfile(info)
    return path


def test_every_runner_arrives_byte_for_byte_and_executable(tmp_path):
    archive = _pack(tmp_path / "runners.tar", {p.name: p.read_bytes() for p in RUNNERS})
    dest = tmp_path / "node" / "var" / "tmp" / "validation" / "runners"
    got = _install(tmp_path, archive, dest)
    assert got["rc"] == 0, got
    assert got["result"]["changed"] is False and got["result"]["files"] == [p.name for p in RUNNERS]
    for runner in RUNNERS:
        assert (dest / runner.name).read_bytes() == runner.read_bytes()
        assert stat.S_IMODE((dest / runner.name).stat().st_mode) == 0o755
    again = _install(tmp_path, archive, dest)  # a later run finds the directory and replaces the runners
    assert again["rc"] == 0 and again["result"]["changed"] is False


@pytest.mark.parametrize("members, link", [({"common.py": b"x", "sub/evil.py": b"y"}, ""),
                                           ({"common.py": b"x"}, "link.py"),
                                           ({"../escaped.py": b"y"}, "")])
def test_an_archive_that_is_not_plain_top_level_files_is_refused_before_anything_is_sent(tmp_path, members, link):
    archive = _pack(tmp_path / "runners.tar", members, link)
    dest = tmp_path / "node" / "validation" / "runners"
    got = _install(tmp_path, archive, dest)
    assert got["rc"] != 0 and got["result"]["failed"] is True
    assert "expected only plain top-level files" in got["result"]["msg"], got["result"]["msg"]
    assert not dest.exists(), "nothing reaches the node"
    assert not (tmp_path / "escaped.py").exists() and not (tmp_path / "node" / "escaped.py").exists()
