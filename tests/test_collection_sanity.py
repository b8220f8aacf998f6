"""The collection passes Ansible's own checks as a site installs it (scripts/collection_check.py): built, installed
offline, ansible-doc of every module and plugin, every module_utils file and plugin imported from the installed
copy, and the sanity tests CI affords (import, ansible-doc, validate-modules, pep8) run offline by ansible-test on
it. The execution environment definition gives ansible-builder a build context."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "scripts"))
import build_collection  # noqa: E402
import collection_check  # noqa: E402

IGNORE = ROOT / "tests" / "sanity" / "ignore-2.19.txt"


@pytest.fixture(scope="module")
def collections(tmp_path_factory) -> Path:
    collections, step = collection_check.install(tmp_path_factory.mktemp("collection"))
    assert step.ok, step.output[-4000:]
    return collections


def test_every_module_and_plugin_documents_itself_in_the_collection(collections):
    steps = collection_check.ansible_doc(collections)
    assert [s.name for s in steps if not s.ok] == [], "\n".join(s.output[-3000:] for s in steps if not s.ok)
    top = collection_check.collection_dir(collections)
    # every module of the bundle, and a documentation file for each action plugin (the Ansible convention)
    assert {p.stem for p in (top / "plugins" / "modules").glob("*.py")} >= {
        p.stem for p in (ROOT / "plugins" / "action").glob("*.py")}


def test_the_collection_documents_each_module_as_the_bundle_does(collections):
    """The build renames, and changes nothing a reader sees: the options and attributes ansible-doc shows for each
    module of the installed collection are the bundle's (ansible-doc -M library), its fragments merged alike."""
    names = sorted(p.stem for p in (ROOT / "library").glob("*.py"))
    bundle = json.loads(subprocess.run([str(BIN / "ansible-doc"), "-M", "library", "-j", *names], cwd=ROOT,
                                       capture_output=True, text=True, timeout=300, check=True).stdout)
    env = collection_check.clean_env(collections)
    fqcns = [f"{collection_check.FQCN}.{n}" for n in names]
    installed = json.loads(subprocess.run([str(BIN / "ansible-doc"), "-j", *fqcns], env=env, capture_output=True,
                                          text=True, timeout=300, check=True).stdout)
    for name, fqcn in zip(names, fqcns, strict=True):
        # our modules are named by their FQCN in the collection's markup (M(powerscale_dgx.ra.<name>))
        ours = bundle[name]["doc"]
        theirs = json.loads(json.dumps(installed[fqcn]["doc"]).replace(f"M({collection_check.FQCN}.", "M("))
        assert theirs["attributes"] == ours["attributes"], name
        assert theirs.get("options") == ours.get("options"), name
        assert theirs["attributes"]["check_mode"]["description"], name  # Ansible's own attribute descriptions


def test_every_module_utils_file_and_plugin_imports_from_the_collection_alone(collections):
    """Through Ansible's collection loader, the project's validation package made unimportable."""
    step = collection_check.import_all(collections)
    assert step.ok, step.output[-4000:]
    expected = len(list((ROOT / "module_utils").glob("*.py"))) + len(list((ROOT / "plugins" / "action").glob("*.py")))
    assert f"{expected + 1} imported" in step.output  # + the readable callback


def test_preflight_plugins_load_the_collections_own_module_utils(collections):
    """preflight_inventory and preflight_targets load their rules by name at run time: inside the collection they
    take the collection's module_utils, with nothing of the checkout on the path."""
    code = (
        "import sys\n"
        "from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder\n"
        "_AnsibleCollectionFinder(paths=[sys.argv[1]])._install()\n"
        "import importlib\n"
        "for plugin in ('preflight_inventory', 'preflight_targets'):\n"
        "    action = importlib.import_module(f'ansible_collections.powerscale_dgx.ra.plugins.action.{plugin}')\n"
        "    for name in ('inventory_problem', 'preflight_rules', 'preflight_targets'):\n"
        "        print(action.load_module_utils(name).__name__, action.load_module_utils(name).__file__)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(collections)], cwd=collections,
                          env=collection_check.clean_env(collections), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.splitlines()
    assert len(lines) == 6 and all(line.startswith("ansible_collections.powerscale_dgx.ra.plugins.module_utils.")
                                   and str(collections) in line for line in lines), proc.stdout


def test_ansible_test_sanity_passes_offline(collections):
    """Every ansible-test sanity test on the installed collection, in one run: no error outside
    tests/sanity/ignore-2.19.txt, and each of collection_check.REQUIRED ran."""
    [step] = collection_check.sanity(collections, None)
    print(f"{step.name}: {step.seconds:.1f} s")
    assert step.ok, step.output[-6000:]
    for test in collection_check.REQUIRED:
        assert f'Running sanity test "{test}"' in step.output, f"{test} did not run:\n{step.output[-3000:]}"


def test_the_check_fails_on_a_sanity_error(collections, tmp_path):
    """The same run sees what it is there to see: a module with a pep8 error in the installed copy fails pep8."""
    module = collection_check.collection_dir(collections) / "plugins" / "modules" / "dgx_facts.py"
    original = module.read_text()
    try:
        module.write_text(original + "\n\n\n\nx = 1\n")
        [step] = collection_check.sanity(collections, ["pep8"])
    finally:
        module.write_text(original)
    assert not step.ok and "E303" in step.output, step.output[-3000:]


def test_every_ignore_line_names_a_rule_and_its_reason():
    lines = IGNORE.read_text().splitlines()
    assert lines, "the ignore file is built into the collection; an empty one has no reason to exist"
    for line in lines:
        entry, _sep, reason = line.partition(" # ")
        assert re.fullmatch(r"plugins/\S+\.py [a-z0-9-]+:[a-z0-9-]+", entry), f"{line!r}: path test:code"
        assert len(reason.split()) >= 5, f"{line!r}: no reason"
        name = entry.split()[0].split("/")
        source = {"modules": ROOT / "library"}.get(name[1], ROOT / "plugins" / name[1]) / name[-1]
        assert source.is_file(), f"{line!r}: no such file in the bundle ({source})"


def test_the_readable_callback_works_without_the_validation_package(collections, tmp_path):
    """From the collection, with the project's validation package unimportable: the default output, no stage
    recap; with it importable (the bundle's checkout), the stage recap too."""
    (tmp_path / "play.yml").write_text(yaml.safe_dump([{"name": "stage one | hello", "hosts": "localhost",
                                                        "gather_facts": False,
                                                        "tasks": [{"ansible.builtin.debug": {"msg": "hi"}}]}]))
    blocked = tmp_path / "blocked" / "validation"
    blocked.mkdir(parents=True)
    (blocked / "__init__.py").write_text('raise ImportError("validation is not installed here")\n')
    env = collection_check.clean_env(collections)
    env.update({"ANSIBLE_STDOUT_CALLBACK": "powerscale_dgx.ra.readable", "ANSIBLE_LOCALHOST_WARNING": "0"})
    runs = {}
    for label, pythonpath in (("without", str(tmp_path / "blocked")), ("with", str(ROOT))):
        proc = subprocess.run([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "play.yml"],
                              cwd=tmp_path, env={**env, "PYTHONPATH": pythonpath}, capture_output=True, text=True,
                              timeout=180)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        runs[label] = proc.stdout
    assert "PLAY RECAP" in runs["without"] and '"msg": "hi"' in runs["without"]
    assert "STAGE RECAP" not in runs["without"] and "STAGE RECAP" in runs["with"]


def test_execution_environment_gives_a_build_context(tmp_path):
    """ansible-builder create on execution-environment.yml, with the collection built beside it."""
    build_collection.build(tmp_path / "dist")
    (tmp_path / "execution-environment.yml").write_text((ROOT / "execution-environment.yml").read_text())
    proc = subprocess.run([str(BIN / "ansible-builder"), "create", "-f", "execution-environment.yml",
                           "-c", "context", "--output-filename", "Containerfile"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    context = tmp_path / "context"
    containerfile = (context / "Containerfile").read_text()
    assert "ansible-galaxy collection install --offline /tmp/collection/*.tar.gz" in containerfile
    assert list((context / "_build" / "collection").glob("powerscale_dgx-ra-*.tar.gz"))
    bindep = (context / "_build" / "bindep.txt").read_text()
    assert "openssh-clients [platform:rpm]" in bindep and "sshpass" in bindep


def test_execution_environment_python_requirements_are_the_projects():
    """One home for the control node's Python requirements: pyproject.toml's dependencies, which the execution
    environment names (ansible-core and ansible-runner in their own keys)."""
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    deps = ee["dependencies"]
    listed = [deps["ansible_core"]["package_pip"], deps["ansible_runner"]["package_pip"], *deps["python"]]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert sorted(r.replace(" ", "") for r in listed) == sorted(r.replace(" ", "") for r in project)
    assert ee["version"] == 3


@pytest.mark.skipif(not os.access(Path.home(), os.W_OK), reason="ansible-test keeps its cache under the home")
def test_bootstrap_is_offline_once_done():
    """scripts/ansible_test_bootstrap.py a second time fetches nothing: pip pointed at a closed index works."""
    closed = "http://127.0.0.1:9/simple"
    env = {**os.environ, "PIP_INDEX_URL": closed, "PIP_EXTRA_INDEX_URL": closed, "PIP_RETRIES": "0"}
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "ansible_test_bootstrap.py")],
                          capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    get_pip = Path(proc.stdout.strip())
    assert get_pip.is_file() and re.fullmatch(r"get_pip_\d+_\d+(_\d+)?\.py", get_pip.name)
