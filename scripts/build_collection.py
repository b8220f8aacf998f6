#!/usr/bin/env python3
"""Build the bundle's roles, modules, module_utils and plugins as an Ansible collection tarball (offline).

    .venv/bin/python scripts/build_collection.py [--output-path dist]

A site with its own playbooks installs the tarball (``ansible-galaxy collection install
dist/powerscale_dgx-ra-<version>.tar.gz -p <collections path>``, no network) and calls the same code the
bundle runs: roles ``powerscale_dgx.ra.<role>``, modules ``powerscale_dgx.ra.<module>``. Nothing is copied by
hand: the layout is derived from the checkout each time, so the collection cannot drift from the bundle.

What the build changes, and only that:
- ``library/*.py`` -> ``plugins/modules/``; ``module_utils/*.py`` -> ``plugins/module_utils/``;
  ``plugins/{action,callback,doc_fragments}`` as they are. The bundle keeps every controller-side plugin in that
  one ``plugins/`` tree (ansible.cfg), never in a role: a role that carries ``library/``, ``module_utils/`` or
  ``*_plugins/`` stops the build (roles inside a collection cannot carry plugins).
- In Python files: ``ansible.module_utils.<ours>`` -> ``ansible_collections.powerscale_dgx.ra.plugins.
  module_utils.<ours>`` (Ansible ships a collection's module_utils under that name), as does
  ``from ansible.module_utils import <ours>, ...``; and the documentation fragments ours, or a section of one
  (``module_attributes.changes``) -> ``powerscale_dgx.ra.<fragment>[.<section>]``; in documentation, our
  modules named by seealso (``- module: <ours>``) or markup (``M(<ours>)``) -> ``powerscale_dgx.ra.<ours>``.
- Roles are copied without their Molecule scenarios. Roles call modules by their short names: a role inside a
  collection looks in its own collection first.
The validation roles run the project's ``validation`` package on the control node (``validate_report_project_dir``,
by default the checkout the roles come from): a site using them from the collection points that variable at a
checkout or installed copy of this project.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAMESPACE, NAME = "powerscale_dgx", "ra"
PREFIX = f"ansible_collections.{NAMESPACE}.{NAME}.plugins.module_utils"
IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc", "molecule", ".pytest_cache")


def our_names(directory: Path) -> list[str]:
    return sorted(p.stem for p in directory.glob("*.py") if p.stem != "__init__")


def role_plugin_dirs(roles: Path) -> list[Path]:
    """Plugin folders inside roles (library/, module_utils/, action_plugins/, filter_plugins/ ...): none belong
    there, the bundle keeps them in library/, module_utils/ and plugins/."""
    return sorted(p for p in roles.glob("*/*") if p.is_dir() and (p.name in ("library", "module_utils")
                                                                  or p.name.endswith("_plugins")))


def rewrite_python(text: str, utils: list[str], fragments: list[str], modules: list[str] | None = None) -> str:
    """Point imports of our module_utils, uses of our doc fragments and references to our modules in documentation
    (seealso ``- module: <ours>``, markup ``M(<ours>)``) at the collection's names."""
    if utils:
        ours = "|".join(map(re.escape, utils))
        text = re.sub(r"\bansible\.module_utils\.(" + ours + r")\b", lambda m: f"{PREFIX}.{m.group(1)}", text)
        # `from ansible.module_utils import a, b`: the statement moves when every name imported is ours
        names = rf"(?:{ours})(?:\s*,\s*(?:{ours}))*"
        text = re.sub(rf"^(\s*)from ansible\.module_utils import ({names})\s*$",
                      lambda m: f"{m.group(1)}from {PREFIX} import {m.group(2)}", text, flags=re.M)
    if fragments:
        # a fragment, or one of its sections (`- module_attributes.changes`)
        text = re.sub(r"^(\s*-\s*)((?:" + "|".join(map(re.escape, fragments)) + r")(?:\.\w+)?)\s*$",
                      lambda m: f"{m.group(1)}{NAMESPACE}.{NAME}.{m.group(2)}", text, flags=re.M)
    if modules:
        ours = "|".join(map(re.escape, modules))
        text = re.sub(rf"^(\s*-\s*module:\s*)({ours})\s*$", lambda m: f"{m.group(1)}{NAMESPACE}.{NAME}.{m.group(2)}",
                      text, flags=re.M)
        text = re.sub(rf"\bM\(({ours})\)", lambda m: f"M({NAMESPACE}.{NAME}.{m.group(1)})", text)
    return text


def galaxy_yml(version: str) -> str:
    return (f"namespace: {NAMESPACE}\nname: {NAME}\nversion: {version}\nreadme: README.md\n"
            "authors: [powerscale-dgx-ra]\n"
            "description: Roles and modules that deploy and validate the Dell PowerScale + NVIDIA DGX A100 reference"
            " architecture (the powerscale-dgx-ra bundle as a collection)\n"
            "license: [Apache-2.0]\ntags: [powerscale, dgx, nvidia, infiniband, cumulus, nfs]\n"
            # ansible.posix, community.general and community.docker come with the `ansible` package; declared as
            # dependencies they would make an offline install ask Galaxy for them
            "dependencies: {}\nrepository: https://example.invalid/powerscale-dgx-ra\n"
            "build_ignore: ['**/__pycache__', '**/*.pyc']\n")


def stage(dest: Path, version: str) -> Path:
    """Lay the collection out under dest/ansible_collections/<namespace>/<name> and return that directory."""
    if carried := role_plugin_dirs(ROOT / "roles"):
        raise SystemExit(f"roles carry plugins of their own: {', '.join(map(str, carried))}. Fix: move them to "
                         "library/, module_utils/ or plugins/<kind>/ (ansible.cfg), the bundle's one tree")
    top = dest / "ansible_collections" / NAMESPACE / NAME
    plugins = top / "plugins"
    utils = our_names(ROOT / "module_utils")
    fragments = our_names(ROOT / "plugins" / "doc_fragments")
    modules = our_names(ROOT / "library")
    shutil.copytree(ROOT / "roles", top / "roles", ignore=IGNORE)
    (plugins / "modules").mkdir(parents=True)
    for src in sorted((ROOT / "library").glob("*.py")):
        shutil.copy2(src, plugins / "modules" / src.name)
    shutil.copytree(ROOT / "module_utils", plugins / "module_utils", ignore=IGNORE)
    for kind in ("action", "callback", "doc_fragments"):
        shutil.copytree(ROOT / "plugins" / kind, plugins / kind, ignore=IGNORE)
    for path in sorted(plugins.rglob("*.py")):
        path.write_text(rewrite_python(path.read_text(encoding="utf-8"), utils, fragments, modules),
                        encoding="utf-8")
    # ansible-test's ignore files (tests/sanity/ignore-<ansible-core>.txt): each line a rule that does not apply,
    # with its reason
    (top / "tests" / "sanity").mkdir(parents=True)
    for ignore in sorted((ROOT / "tests" / "sanity").glob("ignore-*.txt")):
        shutil.copy2(ignore, top / "tests" / "sanity" / ignore.name)
    (top / "meta").mkdir()
    (top / "meta" / "runtime.yml").write_text('---\nrequires_ansible: ">=2.19"\n', encoding="utf-8")
    (top / "galaxy.yml").write_text(galaxy_yml(version), encoding="utf-8")
    (top / "README.md").write_text(
        f"# {NAMESPACE}.{NAME}\n\nThe roles, modules and plugins of the powerscale-dgx-ra bundle, built by "
        "`scripts/build_collection.py` from the bundle's checkout. See the bundle's README.md and "
        "docs/components.md for what each does. Needs ansible-core 2.19 and the ansible.posix, community.general "
        "and community.docker collections (all in the `ansible` package).\n", encoding="utf-8")
    return top


def project_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]


def build(output_path: Path) -> Path:
    output_path.mkdir(parents=True, exist_ok=True)
    version = project_version()
    with tempfile.TemporaryDirectory(prefix="collection-") as tmp:
        top = stage(Path(tmp), version)
        galaxy = Path(sys.executable).parent / "ansible-galaxy"
        subprocess.run([str(galaxy), "collection", "build", str(top), "--output-path", str(output_path), "--force"],
                       check=True, capture_output=True, text=True)
    tarball = output_path / f"{NAMESPACE}-{NAME}-{version}.tar.gz"
    if not tarball.is_file():
        raise SystemExit(f"ansible-galaxy collection build did not write {tarball}")
    return tarball


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-path", type=Path, default=ROOT / "dist")
    args = parser.parse_args(argv)
    print(build(args.output_path.resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
