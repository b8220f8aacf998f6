"""NGC image references: the input check (inventory_problems), pinning by tag and digest, mirror names, enroot/SIF file names.

Shared by library/dgx_ngc_images.py (controller side plan of roles/ngc), the handover checks (tests/handover/)
and lab/registry.py (which seeds stand-ins under the same repository names). Standard library only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.inventory_problem import WARNING, Problem

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
REPOSITORY_PATH = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$")
# HOST[:PORT] as docker's reference grammar takes a registry: dot-separated labels of letters, digits and inner
# hyphens (an IPv4 address is such a name), an optional port.
REGISTRY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
                      r"(?::[0-9]{1,5})?$")


@dataclass(frozen=True)
class NgcImage:
    """One pinned image: registry/path:tag[@digest]."""

    registry: str
    path: str  # repository path below the registry, e.g. nvidia/pytorch
    tag: str
    digest: str = ""
    purpose: str = ""

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.path}"

    @property
    def tagged(self) -> str:
        return f"{self.name}:{self.tag}"

    @property
    def pinned(self) -> str:
        """What is pulled: tag and digest (the digest wins, the tag documents)."""
        return f"{self.tagged}@{self.digest}" if self.digest else self.tagged

    def on_registry(self, registry: str) -> NgcImage:
        return NgcImage(registry=registry, path=self.path, tag=self.tag, digest=self.digest, purpose=self.purpose)

    @property
    def file_stem(self) -> str:
        """enroot's naming of an imported image: nvidia+pytorch+24.05-py3."""
        return f"{self.path.replace('/', '+')}+{self.tag}"


def split_name(name: str) -> tuple[str, str]:
    """('nvcr.io', 'nvidia/pytorch') from 'nvcr.io/nvidia/pytorch'."""
    registry, _unused, path = name.partition("/")
    return registry, path


def check_image(host: str, entry: Any, variable: str, ngc_registry: str) -> list[Problem]:
    if not isinstance(entry, dict):
        return [Problem(host, variable, entry, "must be a mapping", "give name, tag, digest, purpose")]
    problems: list[Problem] = []
    name = entry.get("name")
    registry, path = split_name(name) if isinstance(name, str) else ("", "")
    if not isinstance(name, str) or registry != ngc_registry or not REPOSITORY_PATH.match(path):
        problems.append(Problem(host, f"{variable}.name", name, f"must be {ngc_registry}/<org>/<repository>",
                                f"e.g. {ngc_registry}/nvidia/pytorch"))
    tag = entry.get("tag")
    if not isinstance(tag, str) or not TAG.match(tag) or tag == "latest":
        problems.append(Problem(host, f"{variable}.tag", tag, "must be an explicit tag (not latest): latest is no pin, "
                                "a run would use whatever was pushed last",
                                "pin a release tag such as 24.05-py3"))
    digest = entry.get("digest", "")
    if digest not in ("", None) and (not isinstance(digest, str) or not DIGEST.match(digest)):
        problems.append(Problem(host, f"{variable}.digest", digest, "must be sha256: and 64 hex digits, or empty",
                                "copy it from `docker inspect --format '{{.RepoDigests}}'` or the registry"))
    return problems


def unpinned_problem(host: str, entry: Any, variable: str) -> list[Problem]:
    """A tag without a digest is a warning: a re-pushed tag would change the image unnoticed."""
    if not isinstance(entry, dict) or not isinstance(entry.get("tag"), str) or entry["tag"] == "latest" \
            or entry.get("digest") not in ("", None):
        return []
    ref = f"{entry.get('name')}:{entry['tag']}"
    return [Problem(host, f"{variable}.digest", entry.get("digest", ""),
                    f"{ref} is pinned by tag only; a re-pushed tag would change it unnoticed",
                    f"add digest: sha256:... (docker buildx imagetools inspect {ref})", WARNING)]


def inventory_problems(host: str, images: Any, optional_images: Any, pull_optional: bool, mirror: Any,
                       ngc_registry: str = "nvcr.io") -> list[Problem]:
    """The NGC images' inventory rules, their one home: every image named under ngc_registry, pinned by an explicit
    tag (never latest) and a well-formed digest (a missing digest is a warning); mirror mode names its registry.

    ngc_optional_images are judged when pull_optional is true. library/dgx_ngc_plan.py passes ngc_pull_optional
    (it judges what this run pulls); preflight (preflight_rules.rule_ngc) passes true (it judges the inventory)."""
    problems: list[Problem] = []
    for variable, entries in (("ngc_images", images), ("ngc_optional_images", optional_images)):
        if variable == "ngc_optional_images" and not pull_optional:
            continue
        for index, entry in enumerate(entries if isinstance(entries, list) else []):
            problems += check_image(host, entry, f"{variable}[{index}]", ngc_registry)
            problems += unpinned_problem(host, entry, f"{variable}[{index}]")
    return problems + check_mirror(host, mirror)


def image_from_entry(entry: dict[str, Any]) -> NgcImage:
    registry, path = split_name(entry["name"])
    return NgcImage(registry=registry, path=path, tag=str(entry["tag"]), digest=str(entry.get("digest") or ""),
                    purpose=str(entry.get("purpose", "")))


def selected_images(images: list[Any], optional_images: list[Any], pull_optional: bool) -> list[Any]:
    return list(images or []) + (list(optional_images or []) if pull_optional else [])


def check_mirror(host: str, mirror: Any) -> list[Problem]:
    if not isinstance(mirror, dict):
        return [Problem(host, "ngc_mirror", mirror, "must be a mapping", "see ngc.yml")]
    if not mirror.get("enabled", False):
        return []
    registry = mirror.get("registry", "")
    if not isinstance(registry, str) or not REGISTRY.match(registry):
        return [Problem(host, "ngc_mirror.registry", registry, "must be host[:port] of the site registry",
                        "e.g. registry.example.com:5000")]
    return []


def digest_matches(repo_digests: list[str], name: str, digest: str) -> bool:
    """Whether `docker inspect`'s RepoDigests (name@sha256:...) hold `digest` for repository `name`."""
    return f"{name}@{digest}" in (repo_digests or [])
