"""Which NVIDIA driver an NGC framework container release can run on: the one home of that table.

Each NGC framework release (the YY.MM of tags such as ``pytorch:24.05-py3``) is built on one CUDA release,
which needs a minimum driver. On data-center GPUs (A100 included) the CUDA forward-compatibility package in
the container also lets it run on some older long-lived branches, each from a minimum version. Both figures
come from the "Driver Requirements" section of NVIDIA's release notes of that container release; each row
names its page. Releases not in the table are not guessed: the check says it cannot tell.

Used by preflight (module_utils/preflight_rules.py, rule_ngc_driver) for the pinned driver of every GPU node.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

NOTES = "https://docs.nvidia.com/deeplearning/frameworks/pytorch-release-notes"
TAG_RE = re.compile(r"^(\d{2})\.(\d{2})(?:-|$)")
FRAMEWORK_IMAGES = ("nvcr.io/nvidia/pytorch", "nvcr.io/nvidia/mxnet", "nvcr.io/nvidia/tensorflow")


@dataclass(frozen=True)
class ContainerRelease:
    release: str                 # YY.MM
    cuda: str                    # the CUDA release the container is built on
    min_driver: str              # the driver it needs without forward compatibility
    compat: dict[str, str] = field(default_factory=dict)  # data-center GPUs: branch -> minimum version
    source: str = ""


RELEASES: dict[str, ContainerRelease] = {r.release: r for r in (
    ContainerRelease("20.02", "10.2.89", "440.33.01",
                     {"384": "384.111", "396": "396", "410": "410", "418": "418", "440": "440.30"},
                     f"{NOTES}/rel_20-02.html (Driver Requirements)"),
    ContainerRelease("20.06", "11.0.167", "450", {"418": "418", "440": "440.30"},
                     f"{NOTES}/rel_20-06.html (Driver Requirements); also MXNet release notes 20.06"),
    ContainerRelease("24.05", "12.4.1", "550",
                     {"470": "470.57", "525": "525.85", "535": "535.86", "545": "545.23"},
                     f"{NOTES}/rel-24-05.html (Driver Requirements)"),
)}


def version(value: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", value))


def release_of(tag: str) -> str | None:
    m = TAG_RE.match(tag or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


@dataclass(frozen=True)
class Verdict:
    ok: bool | None              # None: the table does not know the release
    reason: str


def judge(image: str, tag: str, driver: str) -> Verdict:
    """Can the container ``image:tag`` run on driver ``driver`` of a data-center GPU?"""
    if image not in FRAMEWORK_IMAGES:
        return Verdict(True, "not an NGC framework image")
    release = release_of(tag)
    row = RELEASES.get(release or "")
    if row is None:
        return Verdict(None, f"{image}:{tag}: release {release or tag} is not in the driver table "
                             "(module_utils/ngc_driver_support.py)")
    have = version(driver)
    if not have:
        return Verdict(False, f"driver {driver!r} is not a version")
    if have >= version(row.min_driver):
        return Verdict(True, f"CUDA {row.cuda} needs driver {row.min_driver}+")
    branch = str(have[0])
    floor = row.compat.get(branch)
    if floor is not None and have >= version(floor):
        return Verdict(True, f"R{branch} >= {floor} runs CUDA {row.cuda} through forward compatibility")
    compat = ", ".join(f"R{b} >= {v}" for b, v in sorted(row.compat.items(), key=lambda kv: int(kv[0])))
    return Verdict(False, f"{image}:{tag} is built on CUDA {row.cuda}, which needs driver {row.min_driver} or "
                          f"later{f' (on data-center GPUs also {compat})' if compat else ''}; source: {row.source}")
