"""module_utils/host_state + library/host_state: one read says what the apt/service/file/copy tasks would change.

The rule tested throughout: "in sync" only when the real module would report no change; every doubtful
case is drift, so the real module runs and judges it."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import ansible.module_utils.shell_probe as sp
import pytest
from ansible.module_utils.host_state import (
    FileSeen,
    FileWant,
    ServiceWant,
    file_drift,
    missing_packages,
    package_installed,
    parse_dpkg_status,
    parse_image_inspect,
    probe_script,
    seen_from_stat,
    service_drift,
    state_from_probe,
)

ROOT = Path(__file__).resolve().parents[2]

# dpkg-query -W -f '${Package}\t${db:Status-Abbrev}\n' bash coreutils nosuchpkg, Debian 12 (rc 1: the unknown
# name goes to stderr, not stdout); a removed package keeping its config files shows "rc ".
DPKG_OUT = "bash\tii \ncoreutils\tii \nnfs-common\trc \ndocker.io\tiF \nlibfoo\thi \n"


def test_dpkg_status_parsed_per_name():
    status = parse_dpkg_status(DPKG_OUT)
    assert status["bash"] == "ii " and status["nfs-common"] == "rc " and "nosuchpkg" not in status


@pytest.mark.parametrize(("abbrev", "installed"), [
    ("ii ", True), ("hi ", True),         # held, installed: apt state=present is satisfied
    ("rc ", False), ("iF ", False),       # config files only; half-configured
    ("iiR", False),                        # reinstall required (error flag)
    ("", False), (None, False),
])
def test_installed_means_status_installed_without_error(abbrev, installed):
    assert package_installed(abbrev) is installed


def test_missing_packages_keep_order_and_count_unknown_and_pinned_names():
    status = parse_dpkg_status(DPKG_OUT)
    wanted = ["bash", "nfs-common", "nosuchpkg", "coreutils=9.1-1", "docker.io", "libfoo"]
    assert missing_packages(wanted, status) == ["nfs-common", "nosuchpkg", "coreutils=9.1-1", "docker.io"]


def test_service_enabled_and_active_is_in_sync():
    assert service_drift(ServiceWant("docker"), "enabled\n", "active\n") == []


@pytest.mark.parametrize(("enabled", "active", "expect"), [
    ("disabled", "active", ["docker is-enabled: disabled, want enabled"]),
    ("static", "active", ["docker is-enabled: static, want enabled"]),   # the service module judges it
    ("enabled", "inactive", ["docker is-active: inactive, want active"]),
    ("", "", ["docker is-enabled: no answer, want enabled", "docker is-active: no answer, want active"]),
])
def test_service_drift_names_unit_and_state(enabled, active, expect):
    assert service_drift(ServiceWant("docker"), enabled, active) == expect


def test_service_not_required_running_ignores_active():
    assert service_drift(ServiceWant("docker", enabled=True, started=False), "enabled", "inactive") == []


CA = FileWant("/etc/docker/certs.d/m:5000/ca.crt", sha1="AB" * 20, owner="root", group="root", mode="0644")


def test_file_in_sync():
    assert file_drift(CA, FileSeen("file", sha1="ab" * 20, owner="root", group="root", mode=0o644)) == []


@pytest.mark.parametrize(("seen", "reason"), [
    (FileSeen("absent"), "is absent, want file"),
    (FileSeen("directory", owner="root", group="root", mode=0o755), "is directory, want file"),
    (FileSeen("file", sha1="cd" * 20, owner="root", group="root", mode=0o644), "content differs"),
    (FileSeen("file", sha1="ab" * 20, owner="nobody", group="root", mode=0o644), "owner nobody, want root"),
    (FileSeen("file", sha1="ab" * 20, owner="root", group="root", mode=0o666), "mode 0666, want 0644"),
])
def test_file_drift_says_why(seen, reason):
    drift = file_drift(CA, seen)
    assert len(drift) == 1 and reason in drift[0] and CA.path in drift[0]


def test_the_probe_reads_kind_content_owner_and_mode(tmp_path):
    """probe_script's stat through a real sh, judged on this side (seen_from_stat): a file's kind, SHA-1, owner,
    group and mode; a directory; nothing; a symlink (copy and file replace or refuse one: 'other')."""
    import grp
    import pwd

    f = tmp_path / "ca.crt"
    f.write_bytes(b"-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n")
    f.chmod(0o640)
    os.symlink(f, tmp_path / "link")
    wants = [FileWant(str(f), sha1="0" * 40), FileWant(str(tmp_path), state="directory"),
             FileWant(str(tmp_path / "nope")), FileWant(str(tmp_path / "link"), sha1="0" * 40)]
    out = subprocess.run(["sh", "-c", probe_script([], [], wants, [])], capture_output=True, text=True,
                         timeout=60, check=True).stdout
    answers = sp.read(out, [f"file:{i}" for i in range(len(wants))])
    seen = [seen_from_stat(sp.ran(answers, f"file:{i}")) for i in range(len(wants))]
    st = f.stat()
    assert seen[0] == FileSeen("file", hashlib.sha1(f.read_bytes()).hexdigest(), pwd.getpwuid(st.st_uid)[0],
                               grp.getgrgid(st.st_gid)[0], 0o640)
    assert seen[1].kind == "directory" and seen[2].kind == "absent" and seen[3].kind == "other"
    assert seen[3].sha1 is None
    result = state_from_probe(out, [], [], wants, [])
    assert str(f) in result["files_drift"] and "content differs" in result["files_drift"][str(f)][0]
    assert str(tmp_path) not in result["files_drift"] and result["in_sync"] is False


def test_a_cut_answer_or_a_failed_dpkg_query_is_not_judged():
    with pytest.raises(sp.ProbeError, match="lacks the probe"):
        state_from_probe("", ["bash"], [], [], [])
    line = f"{sp.PROBE_MARK} dpkg 2 - {base64.b64encode(b'dpkg-query: error').decode()}\n"
    with pytest.raises(sp.ProbeError, match="dpkg-query failed"):
        state_from_probe(line, ["bash"], [], [], [])


def test_module_reads_this_machine(tmp_path):
    ca = tmp_path / "ca.crt"
    ca.write_text("pem\n")
    ca.chmod(0o644)
    digest = hashlib.sha1(b"pem\n").hexdigest()
    # --check: the module only reads, so it runs in check mode too
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"host_state": {"packages": ["bash", "nosuchpkg-xyz"],
                        "files": [{"path": str(tmp_path), "state": "directory"},
                                  {"path": str(ca), "sha1": digest, "mode": "0644"},
                                  {"path": str(tmp_path / "absent.crt"), "sha1": digest}],
                        "docker_images": ["nvcr.io/nvidia/pytorch:24.03-py3"]},
         "register": "r"},
        {"ansible.builtin.debug": {"msg": "RESULT={{ r | to_json }}"}}]}]))
    env = {**os.environ, "ANSIBLE_LIBRARY": str(ROOT / "library"), "ANSIBLE_MODULE_UTILS": str(ROOT / "module_utils"),
           "ANSIBLE_STDOUT_CALLBACK": "json"}
    proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           "-e", f"ansible_python_interpreter={sys.executable}", "--check", str(playbook)], capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert result["changed"] is False and result["in_sync"] is False
    assert result["packages_missing"] == ["nosuchpkg-xyz"]
    assert list(result["files_drift"]) == [str(tmp_path / "absent.crt")]
    if shutil.which("docker") is None:  # this machine (CI) has no docker: the images are not read, and why is said
        assert result["docker_images"] is None
        assert result["docker_images_unread"] == "the docker CLI is not installed"
    else:  # a docker CLI: the image is not there ([]) or the daemon did not answer (None, with its words)
        assert (result["docker_images"] == [] and result["docker_images_unread"] == "") or (
            result["docker_images"] is None and "daemon" in result["docker_images_unread"])


# docker image inspect, from real captures (tests/fixtures/docker/real/SOURCES)
DOCKER_REAL = ROOT / "tests" / "fixtures" / "docker" / "real"


def test_image_inspect_of_a_present_image_is_the_api_object():
    out = (DOCKER_REAL / "image-inspect-found-function-inspec.json").read_text()
    images, why = parse_image_inspect(0, out, "")
    assert why == "" and len(images) == 1
    assert images[0]["RepoTags"] == ["donaldrich/function:inspec"]
    assert images[0]["RepoDigests"] == [
        "donaldrich/function@sha256:6925de86a785b22c96e9b4d9b65df8c297b564f41e78974808cfda79c43b0db6"]


@pytest.mark.parametrize("capture", ["image-inspect-missing-docker-modern.txt",
                                     "inspect-type-image-missing-docker-1.9.1.txt"])
def test_image_inspect_of_a_missing_image_reads_as_no_image(capture):
    lines = (DOCKER_REAL / capture).read_text().splitlines()
    out = "\n".join(line for line in lines if line == "[]") + "\n"
    err = "\n".join(line for line in lines if line != "[]") + "\n"
    assert parse_image_inspect(1, out, err) == ([], "")


def test_image_inspect_with_one_found_and_one_missing_keeps_the_found_one():
    out = (DOCKER_REAL / "image-inspect-found-function-inspec.json").read_text()
    images, why = parse_image_inspect(1, out, "Error response from daemon: No such image: nvcr.io/x:1\n")
    assert why == "" and [i["RepoTags"] for i in images] == [["donaldrich/function:inspec"]]


@pytest.mark.parametrize(("rc", "out", "err"), [
    (1, "", "Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"),
    (1, "[]\n", "permission denied while trying to connect to the Docker daemon socket\n"),
    (1, "", ""),
    (0, "[{\"Id\": \"sha256:1\"", ""),
    (0, "{\"Id\": \"sha256:1\"}", ""),
    (125, "", "unknown flag: --bogus\n"),
])
def test_image_inspect_that_did_not_answer_is_not_read(rc, out, err):
    images, why = parse_image_inspect(rc, out, err)
    assert images is None and why
