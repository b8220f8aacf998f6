#!/usr/bin/env python3
"""Check the collection as a site gets it: built, installed offline, then Ansible's own checks on the installed copy.

    .venv/bin/python scripts/collection_check.py [--test NAME ...] [--all] [--keep DIR]

1. builds the tarball (scripts/build_collection.py) and installs it with ``ansible-galaxy collection install
   --offline`` into a fresh directory;
2. ``ansible-doc`` of every module (modules, and the documentation of each action plugin) and every callback of
   the installed collection, by its FQCN; the doc fragments they name resolve or ansible-doc fails;
3. imports every module_utils file, action plugin and callback plugin from the installed collection, through
   Ansible's collection loader (the import path a playbook uses), with the project's ``validation`` package made
   unimportable (a site may have the collection alone);
4. ``ansible-test sanity --local`` on the installed collection (tests/sanity/ignore-<version>.txt is built into
   it), offline: scripts/ansible_test_bootstrap.py provides the pip bootstrap and the requirement wheels, and pip
   is told to use only them. Every sanity test in one run (what CI runs, tests/test_collection_sanity.py), or
   only those named with --test; the ones in REQUIRED must be seen running, not skipped.

Prints one line per step with its time; exits non-zero on the first failing step, with its output.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import ansible_test_bootstrap  # noqa: E402
import build_collection  # noqa: E402

BIN = Path(sys.executable).parent
FQCN = f"{build_collection.NAMESPACE}.{build_collection.NAME}"
# Sanity tests that must run on the collection (a skipped one is a failure): what certified collections are held to.
REQUIRED = ("import", "ansible-doc", "validate-modules", "pep8", "pylint", "no-assert", "replace-urlopen",
            "action-plugin-docs", "compile", "yamllint")


@dataclass
class Step:
    name: str
    seconds: float
    ok: bool
    output: str


def collection_dir(collections: Path) -> Path:
    return collections / "ansible_collections" / build_collection.NAMESPACE / build_collection.NAME


def clean_env(collections: Path) -> dict[str, str]:
    """Ansible's settings of the caller (ANSIBLE_*) left out: only the installed collection is on Ansible's path."""
    config = collections / "ansible.cfg"
    if not config.is_file():
        config.write_text("[defaults]\n", encoding="utf-8")  # a site's own config: none of the checkout's paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update({"ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1", "ANSIBLE_CONFIG": str(config)})
    return env


def run(name: str, argv: list[str], **kwargs) -> Step:
    return run_out(name, argv, **kwargs)[0]


def run_out(name: str, argv: list[str], **kwargs) -> tuple[Step, str]:
    """The step and the command's stdout alone."""
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    return Step(name, time.monotonic() - start, proc.returncode == 0, proc.stdout + proc.stderr), proc.stdout


def install(tmp: Path) -> tuple[Path, Step]:
    start = time.monotonic()
    tarball = build_collection.build(tmp / "dist")
    collections = tmp / "collections"
    step = run("build and install --offline", [str(BIN / "ansible-galaxy"), "collection", "install", "--offline",
                                               str(tarball), "-p", str(collections)], timeout=300)
    step.seconds = time.monotonic() - start
    return collections, step


def plugin_names(top: Path, kind: str) -> list[str]:
    return sorted(f"{FQCN}.{p.stem}" for p in (top / "plugins" / kind).glob("*.py") if p.stem != "__init__")


def ansible_doc(collections: Path) -> list[Step]:
    """ansible-doc of every module and callback, one call per plugin type (each name must resolve, with its
    fragments); an action plugin's documentation is its module file's, so every action plugin needs one."""
    top = collection_dir(collections)
    modules = plugin_names(top, "modules")
    undocumented = sorted(set(n.rsplit(".", 1)[1] for n in plugin_names(top, "action"))
                          - set(n.rsplit(".", 1)[1] for n in modules))
    steps = [Step("action plugins documented", 0.0, not undocumented,
                  f"action plugins without a module documentation file: {undocumented}" if undocumented else "")]
    for kind, names in (("module", modules), ("callback", plugin_names(top, "callback"))):
        step, out = run_out(f"ansible-doc -t {kind} ({len(names)})",
                            [str(BIN / "ansible-doc"), "-t", kind, "-j", *names],
                            env=clean_env(collections), timeout=300)
        if step.ok:
            docs = json.loads(out)
            missing = [n for n in names if not (docs.get(n) or {}).get("doc")]
            stderr = step.output[len(out):]  # a fragment or plugin that does not load is a warning there
            problems = [f"no documentation for {n}" for n in missing] + ([] if names else [f"no {kind} found"])
            if problems or "[WARNING]" in stderr or "[ERROR]" in stderr:
                step.ok, step.output = False, "\n".join([*problems, stderr])
        steps.append(step)
    return steps


IMPORT_ALL = """
import importlib, sys
from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder
_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()
sys.modules["validation"] = None  # the project's package, absent where a site installs only the collection
failed = []
for name in sys.argv[2:]:
    try:
        importlib.import_module(name)
    except Exception as exc:  # every failure is reported, by name
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
print("\\n".join(failed) or f"{len(sys.argv) - 2} imported")
sys.exit(1 if failed else 0)
"""


def import_all(collections: Path) -> Step:
    top = collection_dir(collections)
    prefix = f"ansible_collections.{FQCN}.plugins"
    names = [f"{prefix}.{kind}.{p.stem}" for kind in ("module_utils", "action", "callback")
             for p in sorted((top / "plugins" / kind).glob("*.py")) if p.stem != "__init__"]
    # from a directory outside the checkout, so that nothing of it (validation/, module_utils/) is importable
    return run(f"import module_utils, action and callback plugins ({len(names)})",
               [sys.executable, "-c", IMPORT_ALL, str(collections), *names], cwd=collections,
               env=clean_env(collections), timeout=300)


def sanity(collections: Path, tests: list[str] | None) -> list[Step]:
    """ansible-test sanity on the installed collection, each test on its own (its own time), offline."""
    wheels = ansible_test_bootstrap.bootstrap().parent / "wheels"
    env = clean_env(collections)
    # pip inside ansible-test's environments: the wheelhouse only (an environment variable wins over pip.conf)
    env.update({"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    base = [str(BIN / "ansible-test"), "sanity", "--local", "--python", python, "--color", "no"]
    groups = [[t] for t in tests] if tests else [[]]
    return [run(f"ansible-test sanity {' '.join(g) or '(all)'}", base + [a for t in g for a in ("--test", t)],
                cwd=collection_dir(collections), env=env, timeout=1800) for g in groups]


def check(tmp: Path, tests: list[str] | None) -> list[Step]:
    collections, step = install(tmp)
    steps = [step]
    if step.ok:
        steps += ansible_doc(collections)
        steps.append(import_all(collections))
        steps += sanity(collections, tests)
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test", action="append", help="only this ansible-test sanity test (default: every one)")
    parser.add_argument("--all", action="store_true", help="every ansible-test sanity test, in one run (the default)")
    parser.add_argument("--keep", type=Path, help="build and install here (kept) instead of a temporary directory")
    args = parser.parse_args(argv)
    tests = None if args.all else args.test
    with tempfile.TemporaryDirectory(prefix="collection-check-") as tmp:
        where = args.keep.resolve() if args.keep else Path(tmp)
        where.mkdir(parents=True, exist_ok=True)
        steps = check(where, tests)
    for step in steps:
        print(f"{'ok  ' if step.ok else 'FAIL'} {step.seconds:6.1f} s  {step.name}")
    failed = [s for s in steps if not s.ok]
    for step in failed:
        print(f"\n--- {step.name}\n{step.output[-8000:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
