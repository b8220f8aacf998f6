"""roles/ngc and lab/registry.py: image references, digest pinning, mirror plan, deterministic stand-ins."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile

import pytest
from ansible.module_utils.dgx_ngc import (
    NgcImage,
    check_image,
    check_mirror,
    digest_matches,
    image_from_entry,
)
from dgx_ngc_plan import build_plan
from dgx_testlib import load_group_vars

from lab.registry import MANIFEST_TYPE, build_standin, inventory_images

LAB = load_group_vars("lab", "ngc")
PROD = load_group_vars("production", "ngc")
DIGEST = "sha256:" + "ab" * 32


def _params(ngc: dict, **changes) -> dict:
    mirror = {k: v for k, v in ngc["ngc_mirror"].items() if k != "ca_path"}
    params = {"host": "dgx01", "ngc_registry": ngc["ngc_registry"], "ngc_images": ngc["ngc_images"],
              "ngc_optional_images": ngc["ngc_optional_images"], "ngc_pull_optional": ngc["ngc_pull_optional"],
              "ngc_mirror": mirror}
    params.update(changes)
    return params


@pytest.mark.parametrize(
    ("entry", "variable", "fragment"),
    [
        ({"name": "nvcr.io/nvidia/pytorch", "tag": "latest"}, "img.tag", "not latest"),
        ({"name": "nvcr.io/nvidia/pytorch", "tag": "24.05-py3", "digest": "sha256:123"}, "img.digest", "64 hex"),
        ({"name": "docker.io/nvidia/pytorch", "tag": "24.05-py3"}, "img.name", "nvcr.io/"),
        ({"name": "nvcr.io/NVIDIA/PyTorch", "tag": "24.05-py3"}, "img.name", "nvcr.io/"),
    ],
)
def test_bad_image_entries_are_refused(entry, variable, fragment):
    problems = check_image("dgx01", entry, "img", "nvcr.io")
    assert any(p.variable == variable and fragment in p.problem for p in problems), problems


def test_good_entry_and_references():
    entry = {"name": "nvcr.io/nvidia/pytorch", "tag": "24.05-py3", "digest": DIGEST, "purpose": "validation"}
    assert check_image("dgx01", entry, "img", "nvcr.io") == []
    image = image_from_entry(entry)
    assert image.tagged == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert image.pinned == f"nvcr.io/nvidia/pytorch:24.05-py3@{DIGEST}"
    assert image.on_registry("registry.lab:15000").name == "registry.lab:15000/nvidia/pytorch"
    assert image.file_stem == "nvidia+pytorch+24.05-py3"
    assert NgcImage("nvcr.io", "nvidia/pytorch", "24.05-py3").pinned == "nvcr.io/nvidia/pytorch:24.05-py3"


def test_digest_matching_uses_the_repository_it_came_from():
    digests = [f"registry.lab:15000/nvidia/pytorch@{DIGEST}"]
    assert digest_matches(digests, "registry.lab:15000/nvidia/pytorch", DIGEST)
    assert not digest_matches(digests, "nvcr.io/nvidia/pytorch", DIGEST)
    assert not digest_matches([], "registry.lab:15000/nvidia/pytorch", DIGEST)


def test_mirror_check():
    assert check_mirror("dgx01", {"enabled": False, "registry": ""}) == []
    assert check_mirror("dgx01", {"enabled": True, "registry": "https://registry.lab"})[0].variable == "ngc_mirror.registry"
    assert check_mirror("dgx01", {"enabled": True, "registry": "registry.lab:15000"}) == []


def test_lab_plan_pulls_from_the_mirror_by_digest_and_retags_to_nvcr():
    plan, rows = build_plan(_params(LAB))
    assert rows == []
    assert plan["login_registry"] == "registry.lab:15000"
    [image] = plan["images"]
    assert image["source"] == f"registry.lab:15000/nvidia/pytorch@{LAB['ngc_images'][0]['digest']}"
    assert image["target"] == "nvcr.io/nvidia/pytorch:24.05-py3"
    assert plan["unpinned"] == []


def test_production_plan_pulls_nvcr_and_reports_unpinned_images():
    plan, rows = build_plan(_params(PROD, ngc_pull_optional=True))
    assert rows == [] and plan["login_registry"] == "nvcr.io"
    assert [i["source"] for i in plan["images"]] == ["nvcr.io/nvidia/pytorch:24.05-py3",
                                                      "nvcr.io/nvidia/mxnet:20.06-py3"]
    assert plan["unpinned"] == ["nvcr.io/nvidia/pytorch:24.05-py3", "nvcr.io/nvidia/mxnet:20.06-py3"]


def test_optional_images_are_checked_only_when_pulled():
    bad_optional = [{"name": "nvcr.io/nvidia/mxnet", "tag": "latest"}]
    assert build_plan(_params(LAB, ngc_optional_images=bad_optional))[1] == []
    assert build_plan(_params(LAB, ngc_optional_images=bad_optional, ngc_pull_optional=True))[1]


def test_lab_inventory_pins_the_digests_the_registry_seeds():
    """The lab's digests are not hand-copied numbers: they must equal what lab.registry builds."""
    pinned = {(e["name"], e["tag"]): e["digest"] for e in LAB["ngc_images"] + LAB["ngc_optional_images"]}
    seeded = {(f"nvcr.io/{r}", t): build_standin(r, t).digest for r, t in inventory_images()}
    assert pinned == seeded


def test_standin_is_a_consistent_deterministic_docker_v2_image():
    first, second = build_standin("nvidia/pytorch", "24.05-py3"), build_standin("nvidia/pytorch", "24.05-py3")
    assert first.manifest == second.manifest and first.digest == second.digest
    assert build_standin("nvidia/pytorch", "24.06-py3").digest != first.digest
    manifest = json.loads(first.manifest)
    assert manifest["mediaType"] == MANIFEST_TYPE and manifest["schemaVersion"] == 2
    assert manifest["config"]["digest"] == first.config.digest
    assert manifest["layers"][0] == {"mediaType": first.layer.media_type, "size": len(first.layer.data),
                                     "digest": first.layer.digest}
    tar_bytes = gzip.decompress(first.layer.data)
    config = json.loads(first.config.data)
    assert config["rootfs"]["diff_ids"] == ["sha256:" + hashlib.sha256(tar_bytes).hexdigest()]
    with tarfile.open(fileobj=io.BytesIO(tar_bytes)) as tar:
        readme = tar.extractfile("ngc-standin/README").read().decode()
    assert "nvcr.io/nvidia/pytorch:24.05-py3" in readme
