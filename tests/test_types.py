"""Types: mypy, with the project's [tool.mypy] configuration (pyproject.toml), finds no error in module_utils/,
validation/ and lab/; and typings/ gives every module_utils file its Ansible name, ansible.module_utils.<name>."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STUBS = ROOT / "typings" / "ansible" / "module_utils"


def test_mypy_is_clean():
    # The configuration's cache_dir (.cache/mypy) keeps a second run to a few seconds.
    proc = subprocess.run([sys.executable, "-m", "mypy", "--config-file", "pyproject.toml"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Success" in proc.stdout, f"mypy exited {proc.returncode}:\n{out[-8000:]}"


def test_one_stub_per_module_utils_file():
    modules = {p.stem for p in (ROOT / "module_utils").glob("*.py") if p.stem != "__init__"}
    stubs = {p.stem for p in STUBS.glob("*.pyi") if p.stem != "__init__"}
    assert not modules - stubs, (f"module_utils files without a stub: {sorted(modules - stubs)}; add "
                                 "typings/ansible/module_utils/<name>.pyi holding `from <name> import *`")
    assert not stubs - modules, f"stubs without a module_utils file: {sorted(stubs - modules)}; remove them"
    wrong = {name: text for name in sorted(stubs)
             if (text := (STUBS / f"{name}.pyi").read_text().strip()) != f"from {name} import *"}
    assert not wrong, f"each stub must be the one line `from <name> import *`, these are not: {wrong}"
