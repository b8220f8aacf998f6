#!/usr/bin/env python3
"""Make `ansible-test sanity` run offline: a local pip bootstrap and a wheelhouse of its sanity requirements.

    .venv/bin/python scripts/ansible_test_bootstrap.py [--cache ~/.ansible/test/cache]

ansible-test runs each sanity test that has Python requirements in a virtual environment of its own
(~/.ansible/test/venv/sanity.<test>/...), created without pip. It puts pip there with a get-pip script that it
downloads from ci-files.testing.ansible.com, then pip-installs the test's pinned requirements
(ansible_test/_data/requirements/sanity.*.txt) from the index. Neither is reachable offline. This script, run once
per ansible-core version (scripts/install.sh --dev runs it):

- downloads the wheels of those pinned requirements, and pip at the version ansible-test bootstraps, into
  <cache>/wheels (from the package index, only what is missing: offline when everything is there);
- writes <cache>/get_pip_<version>.py, the file ansible-test looks for before it downloads anything: it installs
  pip from that wheelhouse, and writes the new environment's pip.conf (no index, the wheelhouse as its only
  source), so the requirements that follow come from the wheelhouse too.

After that, `ansible-test sanity` needs no network. A requirement missing from the wheelhouse fails the test's
environment ("No matching distribution"); the fix is to run this script again (a new ansible-core pins new
versions).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import ansible_test

DATA = Path(ansible_test.__file__).resolve().parent / "_data" / "requirements"
DEFAULT_CACHE = Path("~/.ansible/test/cache").expanduser()  # ansible-test's own cache (requirements.py bootstrap)

GET_PIP = '''\
"""Local stand-in for https://ci-files.testing.ansible.com/ansible-test/get-pip-{version}.py, written by the
powerscale-dgx-ra bundle's scripts/ansible_test_bootstrap.py: installs pip {version} from the wheelhouse
{wheels} (no index) into the running (new, empty) virtual environment, and makes that wheelhouse the
environment's only package source (<venv>/pip.conf), so ansible-test's requirement installs stay offline."""

import sys
from pathlib import Path

WHEELS = Path({wheels!r})
PIP_WHEEL = WHEELS / {wheel!r}
sys.path.insert(0, str(PIP_WHEEL))  # pip runs from its own wheel (as get-pip.py does from its embedded copy)

from pip._internal.cli.main import main  # noqa: E402

# get-pip.py's own options (what not to install besides pip): pip install does not know them
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
Path(sys.prefix, "pip.conf").write_text(f"[global]\\nno-index = true\\nfind-links = {{WHEELS}}\\n", encoding="utf-8")
sys.exit(main(["install", "--no-index", "--find-links", str(WHEELS), *args]))
'''


def pip_version() -> str:
    """The pip version ansible-test bootstraps into its sanity environments (python_requirements)."""
    from ansible_test._internal.python_requirements import get_venv_packages

    class _Python:  # get_venv_packages reads only .version
        version = f"{sys.version_info.major}.{sys.version_info.minor}"

    return get_venv_packages(_Python())["pip"]  # type: ignore[arg-type]


def requirement_files() -> list[Path]:
    return sorted(DATA.glob("sanity.*.txt"))


def download(wheels: Path, pip: str) -> None:
    """The wheels of every sanity requirement and of pip, for this Python and platform: offline first (nothing is
    fetched when the wheelhouse already holds them), else from the package index."""
    wheels.mkdir(parents=True, exist_ok=True)
    reqs = [arg for path in requirement_files() for arg in ("-r", str(path))]
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--only-binary=:all:",
           "--dest", str(wheels), f"pip=={pip}", *reqs]
    offline = subprocess.run([*cmd, "--no-index", "--find-links", str(wheels)], capture_output=True, text=True)
    if offline.returncode != 0:
        subprocess.run(cmd, check=True)


def write_get_pip(cache: Path, pip: str) -> Path:
    wheels = cache / "wheels"
    wheel = next((p.name for p in wheels.glob(f"pip-{pip}-*.whl")), None)
    if wheel is None:
        raise SystemExit(f"no pip {pip} wheel in {wheels}. Fix: run this script where the package index answers")
    path = cache / f"get_pip_{pip.replace('.', '_')}.py"
    path.write_text(GET_PIP.format(version=pip, wheels=str(wheels), wheel=wheel), encoding="utf-8")
    return path


def bootstrap(cache: Path = DEFAULT_CACHE) -> Path:
    pip = pip_version()
    download(cache / "wheels", pip)
    return write_get_pip(cache, pip)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="ansible-test's cache folder (default: %(default)s)")
    args = parser.parse_args(argv)
    print(bootstrap(args.cache.expanduser().resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
