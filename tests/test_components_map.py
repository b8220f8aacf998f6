"""docs/components.md names only paths that exist, and names every role, module, action plugin, module_utils
file and simulator of the project (a component added or renamed without the map fails here)."""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from build_collection import role_plugin_dirs  # noqa: E402

MAP = ROOT / "docs" / "components.md"
COMMON_VARS = "inventories/common/group_vars/all"
SITE_VARS = ("inventories/production/group_vars/all", "inventories/lab/group_vars/all")
# A code span that names a file or folder: a path with a slash, or a bare inventory file name.
PATH_RE = re.compile(r"^[\w.*/-]+(/|\.py|\.yml|\.md)$|^[\w.*-]+/[\w.*/-]+$")


def named_paths(text: str) -> list[str]:
    return [span for span in re.findall(r"`([^`]+)`", text) if PATH_RE.match(span)]


def missing(span: str) -> bool:
    """True when `span` names nothing: a path from the repository root (a glob must match), or a bare
    inventory file, which the common layer or else both site inventories must have (hosts.yml: each site's own)."""
    if span == "site.yml":
        return not (ROOT / span).is_file()
    if "/" in span:
        return not (any(ROOT.glob(span)) if "*" in span else (ROOT / span).exists())
    if span == "hosts.yml":
        return not all((ROOT / "inventories" / site / "hosts.yml").is_file() for site in ("production", "lab"))
    return not ((ROOT / COMMON_VARS / span).is_file() or all((ROOT / folder / span).is_file() for folder in SITE_VARS))


def test_every_path_in_the_component_map_exists():
    spans = named_paths(MAP.read_text())
    assert len(spans) > 80, f"the map names too few paths to be one ({len(spans)})"
    absent = [span for span in spans if missing(span)]
    assert not absent, f"docs/components.md names paths that do not exist: {absent}"


def test_the_map_names_every_component_file():
    text = MAP.read_text()
    spans = set(named_paths(text))
    expected = [f"roles/{p.name}" for p in sorted((ROOT / "roles").iterdir()) if p.is_dir()]
    expected += [str(p.relative_to(ROOT)) for folder in ("library", "module_utils", "plugins/action")
                 for p in sorted((ROOT / folder).glob("*.py")) if p.name != "__init__.py"]
    expected += [f"lab/{p.name}" for p in sorted((ROOT / "lab").glob("*_sim")) if p.is_dir()]
    expected += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "playbooks").glob("*.yml"))]
    unmapped = [path for path in expected if path not in spans]
    assert not unmapped, f"docs/components.md has no row naming: {unmapped}"


def test_the_check_sees_a_missing_path():
    assert missing("module_utils/no_such_module.py")
    assert missing("no_such_group_vars_file.yml")
    assert missing("roles/*/meta/no_such_spec.yml")
    assert not missing("roles/*/meta/argument_specs.yml") and not missing("storage_fabric.yml")
    assert named_paths("`Problem`, `python -m lab`, `lab/onefs_sim`, `ngc.yml`") == ["lab/onefs_sim", "ngc.yml"]


def test_controller_plugins_live_in_one_tree():
    """Modules in library/, shared code in module_utils/, every other plugin in plugins/<kind>/, each folder named
    in ansible.cfg: no role carries library/, module_utils/ or *_plugins/ of its own (the collection build
    refuses one too)."""
    assert role_plugin_dirs(ROOT / "roles") == []
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "ansible.cfg")
    configured = {key: cfg.get("defaults", key) for key in cfg.options("defaults")
                  if key in ("library", "module_utils") or key.endswith("_plugins")}
    kinds = sorted(p.name for p in (ROOT / "plugins").iterdir() if p.is_dir() and p.name != "__pycache__")
    expected = {"library": "library", "module_utils": "module_utils",
                **{f"{'doc_fragment' if k == 'doc_fragments' else k}_plugins": f"plugins/{k}" for k in kinds}}
    assert configured == expected


def test_the_one_tree_check_sees_a_role_plugin(tmp_path):
    for folder in ("a/action_plugins", "b/library", "c/filter_plugins", "d/module_utils", "e/tasks", "e/molecule"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "library").write_text("a file, not a folder")
    assert [str(p.relative_to(tmp_path)) for p in role_plugin_dirs(tmp_path)] == [
        "a/action_plugins", "b/library", "c/filter_plugins", "d/module_utils"]
