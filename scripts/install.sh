#!/usr/bin/env bash
# Installs everything this project needs on a fresh Debian 12 machine, using apt and pip only:
#   - the Debian packages listed in scripts/apt-packages.txt (qemu, debootstrap, ... for the lab)
#   - a virtual environment .venv/ with the project and its test extra (pyproject.toml)
# Idempotent: a second run only checks. Run as root or with sudo available.
#   ./scripts/install.sh           runtime + test dependencies
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

mapfile -t apt_packages < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' scripts/apt-packages.txt)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install: apt packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test]'
echo "install: done ($(.venv/bin/ansible --version | head -n1))"
