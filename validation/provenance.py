"""Which bundle wrote a report: its name and version (pyproject.toml of the checkout, else the installed
distribution's metadata) and the git commit of the checkout, read when the report is written.

Never fails: a bundle that is not a git checkout of its own (a copy, a tarball, a subdirectory of another
repository), a missing git binary or a git that refuses the directory gives commit "unknown".
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNKNOWN = "unknown"
_SHA = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")


@dataclass(frozen=True)
class Bundle:
    name: str
    version: str
    commit: str                  # full hash of HEAD, or "unknown"
    dirty: bool | None           # tracked files changed since that commit; None when the commit is unknown

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def project_name_version(root: Path) -> tuple[str, str]:
    """(name, version) from root/pyproject.toml; else from the installed distribution of this package."""
    try:
        project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        return str(project["name"]), str(project["version"])
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, KeyError, TypeError):
        pass
    for dist in importlib.metadata.packages_distributions().get(__package__ or "validation", []):
        try:
            return dist, importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return UNKNOWN, UNKNOWN


def _git(root: Path, *args: str) -> str | None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}  # this checkout, not a caller's
    try:
        p = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=15, env=env,
                           check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def git_commit(root: Path) -> tuple[str, bool | None]:
    """(HEAD's hash, dirty) when root is the top of a git checkout; ("unknown", None) otherwise."""
    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve():
        return UNKNOWN, None
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if head is None or not _SHA.fullmatch(head):
        return UNKNOWN, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return head, (None if status is None else bool(status))


def bundle(root: Path = ROOT) -> Bundle:
    name, version = project_name_version(root)
    commit, dirty = git_commit(root)
    return Bundle(name=name, version=version, commit=commit, dirty=dirty)
