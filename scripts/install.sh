#!/usr/bin/env bash
# Installs what this project needs on a Debian 12 machine, with apt and pip only, in tiers:
#   (always)  a control node that deploys and validates a site: the [control] Debian packages of
#             scripts/apt-packages.txt and a virtual environment .venv/ with the project and its runtime
#             dependencies (pyproject.toml), pinned by constraints.txt
#   --lab     adds the local lab (python -m lab): the [lab] Debian packages (qemu, debootstrap, ...)
#   --dev     adds the tests and linters: the [dev] Debian packages and the `dev` extra (pytest, molecule,
#             ansible-lint, ruff, ansible-builder, ...), and ansible-test's sanity requirements as local wheels
#             (scripts/ansible_test_bootstrap.py). The test suite boots the lab: it needs --lab --dev.
#   --list-apt  print the Debian packages of the chosen tiers, one per line, and exit
# Idempotent: a second run only checks, and needs no network when everything is there (no apt-get update
# when no package is missing; pip tries --no-index first). Run as root or with sudo available.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() { echo "usage: $0 [--lab] [--dev] [--list-apt]" >&2; exit 2; }

tiers=(control)
extras=""
list_only=false
for arg in "$@"; do
  case "$arg" in
    --lab) tiers+=(lab) ;;
    --dev) tiers+=(dev); extras="[dev]" ;;
    --list-apt) list_only=true ;;
    *) echo "install: unknown option $arg" >&2; usage ;;
  esac
done

# The packages of the asked tiers: lines under a "[tier]" heading, comments and blank lines dropped.
apt_packages_of() {
  awk -v want=" $* " '
    { sub(/#.*/, ""); gsub(/^[ \t]+|[ \t]+$/, "") }
    /^\[[a-z]+\]$/ { tier = substr($0, 2, length($0) - 2); next }
    $0 != "" && index(want, " " tier " ") { print }
  ' scripts/apt-packages.txt
}
mapfile -t apt_packages < <(apt_packages_of "${tiers[@]}")
if $list_only; then
  printf '%s\n' "${apt_packages[@]}"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
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
# Offline first: when the venv already satisfies the constraints nothing is fetched; else from the index.
pip_install() {
  .venv/bin/python -m pip install -q --no-index "$@" 2>/dev/null || .venv/bin/python -m pip install -q "$@"
}
# pip and setuptools at the pinned versions first: the project is installed without build isolation (the
# venv's setuptools builds it), so a re-run downloads no build backend.
pip_install -c constraints.txt pip setuptools
pip_install -c constraints.txt --no-build-isolation --no-compile -e ".${extras}"
# Byte-compile what the control node imports, in parallel: pip's own compile step (one process) spent about
# 20 of its 27 s on the `ansible` package's 15,000 collection files, of which the controller imports only
# the collections the roles use; their modules run on the targets from source (AnsiballZ), so they are skipped.
.venv/bin/python -m compileall -q -j 0 \
  -x 'ansible_collections/(?!ansible/posix/|community/docker/|community/general/)|/plugins/modules/' \
  "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" >/dev/null
if [ -n "$extras" ]; then
  # ansible-test sanity on the built collection, offline (docs/collection.md): the pip bootstrap and the pinned
  # requirement wheels of its test environments, under ~/.ansible/test/cache (fetched once, then offline)
  .venv/bin/python scripts/ansible_test_bootstrap.py >/dev/null
fi
echo "install: done, tiers: ${tiers[*]} ($(.venv/bin/ansible --version | sed -n 1p))"
