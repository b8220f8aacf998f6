"""Repository-wide checks: the README's commands and CI agree, playbooks parse on both inventories,
every custom module documents itself, and the linters report nothing."""

from __future__ import annotations

import functools
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible.plugins.loader import fragment_loader, init_plugin_loader
from ansible.utils.plugin_docs import add_fragments

from validation.inventory_layers import inventory_args

ROOT = Path(__file__).resolve().parent.parent
VENV_BIN = Path(sys.executable).parent
INVENTORIES = ["inventories/lab", "inventories/production"]


def _quickstart_blocks() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Quickstart\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "README.md has no '## Quickstart' section"
    return [b.strip() for b in re.findall(r"```(?:sh|bash|shell)\n(.*?)```", section.group(1), re.S)]


def _run(args: list[str], **kw) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=600, **kw)


def test_quickstart_has_exactly_two_shell_blocks():
    blocks = _quickstart_blocks()
    assert len(blocks) == 2, f"Quickstart must hold exactly two shell code blocks, found {len(blocks)}"
    assert "install.sh" in blocks[0] and "install.sh" in blocks[1], "both Quickstart blocks must install everything"


def test_ci_runs_exactly_the_readme_test_command():
    test_command = _quickstart_blocks()[1]
    ci_lines = [
        line.strip()
        for line in (ROOT / ".ci/run").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert test_command in ci_lines, f".ci/run does not run the README's test command {test_command!r}"


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_site_syntax_check(inventory):
    proc = _run([str(VENV_BIN / "ansible-playbook"), *inventory_args(inventory), "--syntax-check", "site.yml"])
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_inventory_has_every_group(inventory):
    proc = _run([str(VENV_BIN / "ansible-inventory"), *inventory_args(inventory), "--graph"])
    assert proc.returncode == 0, proc.stderr
    for group in ("dgx", "powerscale", "sn3700v", "qm8700"):
        assert f"@{group}:" in proc.stdout, f"{inventory} lacks group {group}"
    assert "WARNING" not in proc.stderr, proc.stderr


def _custom_modules() -> list[str]:
    return sorted(p.stem for p in (ROOT / "library").glob("*.py") if not p.name.startswith("_"))


@pytest.mark.parametrize("module", _custom_modules())
def test_module_documents_itself(module):
    proc = _run([str(VENV_BIN / "ansible-doc"), "-M", "library", "-j", module])
    assert proc.returncode == 0, proc.stderr
    assert '"doc"' in proc.stdout and '"examples"' in proc.stdout and '"return"' in proc.stdout, (
        f"{module}: DOCUMENTATION, EXAMPLES and RETURN are all required"
    )


SUPPORT = {"full", "partial", "none", "N/A"}


@functools.cache
def _collection_loader() -> None:
    """Ansible's collection loader, once: FQCN fragments (ansible.builtin.action_common_attributes) resolve
    through it."""
    init_plugin_loader()


def _documentation(module: str) -> dict:
    """The module's DOCUMENTATION as ansible-doc shows it: its doc fragments (plugins/doc_fragments, among them
    the shared attributes of module_attributes) merged in by Ansible's own add_fragments."""
    path = ROOT / "library" / f"{module}.py"
    block = re.search(r'^DOCUMENTATION = r?"""\n(.*?)^"""', path.read_text(), re.S | re.M)
    assert block, f"{module}: no DOCUMENTATION string"
    doc = yaml.safe_load(block.group(1))
    _collection_loader()
    fragment_loader.add_directory(str(ROOT / "plugins" / "doc_fragments"))
    add_fragments(doc, str(path), fragment_loader=fragment_loader, is_module=True)
    return doc


def _seealso_module_exists(name: str) -> bool:
    """A module of this bundle (library/), of ansible.builtin, or of an installed collection (ns.coll.name)."""
    if "." not in name:
        return (ROOT / "library" / f"{name}.py").is_file()
    parts = name.split(".")
    if len(parts) != 3:
        return False
    namespace, collection, short = parts
    if (namespace, collection) == ("ansible", "builtin"):
        return importlib.util.find_spec(f"ansible.modules.{short}") is not None
    try:
        return importlib.util.find_spec(f"ansible_collections.{namespace}.{collection}.plugins.modules.{short}") is not None
    except ModuleNotFoundError:
        return False


def _seealso_problems(module: str, seealso: list) -> list[str]:
    problems = []
    for entry in seealso:
        if not isinstance(entry, dict):
            problems.append(f"{module}: seealso entry {entry!r} is not a mapping")
        elif "module" in entry:
            if not _seealso_module_exists(str(entry["module"])):
                problems.append(f"{module}: seealso names module {entry['module']!r}, which is neither in library/ "
                                "nor in ansible.builtin or an installed collection")
        elif {"name", "link", "description"} <= set(entry):
            link = str(entry["link"])
            if not link.startswith("https://") and not (ROOT / link).is_file():
                problems.append(f"{module}: seealso link {link!r} is neither an https URL nor a file of this repository")
        else:
            problems.append(f"{module}: seealso entry {entry!r} needs module, or name + link + description")
    return problems


@pytest.mark.parametrize("module", _custom_modules())
def test_module_declares_attributes_and_seealso(module):
    """Every module states its check mode and diff mode support (and AnsibleModule's supports_check_mode agrees
    with the check mode claim), and points to its related modules: seealso entries that resolve."""
    doc = _documentation(module)
    attributes = doc.get("attributes") or {}
    for key in ("check_mode", "diff_mode"):
        assert attributes.get(key, {}).get("support") in SUPPORT, (
            f"{module}: attributes.{key}.support must be one of {sorted(SUPPORT)}, got {attributes.get(key)!r}")
    code = (ROOT / "library" / f"{module}.py").read_text()
    if "AnsibleModule(" in code:
        declared = re.search(r"supports_check_mode\s*=\s*True", code) is not None
        claimed = attributes["check_mode"]["support"] in ("full", "partial")
        assert declared == claimed, (f"{module}: attributes.check_mode.support is "
                                     f"{attributes['check_mode']['support']!r} but supports_check_mode={declared}")
    seealso = doc.get("seealso")
    assert isinstance(seealso, list) and seealso, f"{module}: DOCUMENTATION has no seealso list"
    assert _seealso_problems(module, seealso) == []


def test_seealso_check_catches_unknown_modules_and_dead_links():
    assert _seealso_problems("m", [{"module": "powerscale_info"}, {"module": "ansible.builtin.copy"},
                                   {"name": "x", "link": "roles/powerscale/README.md", "description": "d"}]) == []
    bad = [{"module": "powerscale_nothing"}, {"module": "ansible.builtin.no_such"}, {"module": "no.such_collection.x"},
           {"name": "x", "link": "roles/none/README.md", "description": "d"}, {"name": "x"}, "m"]
    assert len(_seealso_problems("m", bad)) == len(bad)


def test_ansible_lint_production_profile_is_clean():
    config = (ROOT / ".ansible-lint").read_text()
    assert "skip_list" not in config and "warn_list" not in config, "no skip list: fix the finding instead"
    proc = _run([str(VENV_BIN / "ansible-lint"), "--profile", "production", "--nocolor"])
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-6000:]


def test_ruff_is_clean():
    proc = _run([str(VENV_BIN / "ruff"), "check", "."])
    assert proc.returncode == 0, proc.stdout[-6000:]


def test_ssh_host_keys_are_checked_everywhere():
    """ansible.cfg checks host keys for every inventory; no SSH command line of the project switches that off
    (the lab pins its VMs' keys in its run directory instead). The QM8700 role's own SSH client has its
    variable, qm8700_ssh_host_key_checking (default true), which only the lab inventory turns off."""
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    assert cfg.getboolean("defaults", "host_key_checking") is True
    assert "StrictHostKeyChecking=no" not in cfg.get("ssh_connection", "ssh_args")
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    # ... nor an Ansible setting (ANSIBLE_HOST_KEY_CHECKING=False in an environment, e.g. a Molecule scenario's;
    # host_key_checking = False in a config)
    off = re.compile(r"StrictHostKeyChecking[= ]+no|UserKnownHostsFile[= ]+/dev/null"
                     r"|ANSIBLE_HOST_KEY_CHECKING[\"']?\s*[:=]\s*[\"']?(false|no|0)\b"
                     r"|\bhost_key_checking\s*[:=]\s*[\"']?(false|no|0)\b", re.I)
    offenders = [f for f in tracked if f.endswith((".py", ".yml", ".yaml", ".cfg", ".sh", ".j2", ".ini"))
                 and f not in ("tests/test_repo.py", "tests/test_molecule.py")
                 and off.search((ROOT / f).read_text(errors="replace"))]
    assert offenders == [], f"host-key checking switched off in: {offenders}"
