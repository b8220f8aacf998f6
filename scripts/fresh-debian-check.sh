#!/usr/bin/env bash
# The install tiers on a fresh Debian 12, as a new control node gets them: a `debootstrap --variant=minbase
# bookworm` root (no python3, no git, no CA certificates), a clone of this checkout's HEAD in it, then in a chroot:
#   1. scripts/install.sh alone                        -> must exit 0 (a control node)
#   2. preflight of inventories/production, offline    -> must exit 0 (no network namespace: unshare -n)
#   3. scripts/install.sh again, offline               -> must exit 0 (nothing to fetch)
#   4. scripts/install.sh --lab --dev                  -> must exit 0
#   5. scripts/install.sh --lab --dev again, offline   -> must exit 0
# Prints one line per step with its exit status and time, and exits non-zero when any step failed. Needs root,
# debootstrap and the Debian mirror and PyPI. Where this machine reaches PyPI through a TLS-inspecting proxy, give
# its CA bundle with --ca FILE (copied into the root and named by PIP_CERT there; a site machine needs none).
# Usage: sudo scripts/fresh-debian-check.sh [--ca FILE] [--keep] [WORKDIR (default /tmp/fresh-debian-check)]
set -uo pipefail
cd "$(dirname "$0")/.."
ca="" keep=false work=/tmp/fresh-debian-check
while [ $# -gt 0 ]; do
  case "$1" in
    --ca) ca="$2"; shift 2 ;;
    --keep) keep=true; shift ;;
    -*) echo "usage: $0 [--ca FILE] [--keep] [WORKDIR]" >&2; exit 2 ;;
    *) work="$1"; shift ;;
  esac
done
[ "$(id -u)" -eq 0 ] || { echo "fresh-debian-check: needs root (debootstrap, chroot, unshare)" >&2; exit 2; }
root="$work/rootfs"
rm -rf "$work" && mkdir -p "$work" || exit 2
mounted=()
cleanup() {
  for ((i=${#mounted[@]}-1; i>=0; i--)); do umount -l "${mounted[$i]}"; done
  $keep || rm -rf "$work"
}
trap cleanup EXIT
failed=0
step() {  # step NAME NETWORK(yes|no) COMMAND: one line with the exit status and the time; the log in $work
  local name="$1" net="$2" cmd="$3" t rc
  t=$(date +%s)
  local run=(chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             LANG=C.UTF-8 ${ca:+PIP_CERT=/root/pip-ca.crt} bash -c "cd /root/powerscale-dgx-ra && $cmd")
  if [ "$net" = no ]; then run=(unshare -n "${run[@]}"); fi
  "${run[@]}" > "$work/$name.log" 2>&1
  rc=$?
  echo "$name: rc=$rc in $(( $(date +%s) - t )) s (log $work/$name.log)"
  [ "$rc" -eq 0 ] || failed=1
}
t0=$(date +%s)
debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 \
  || { echo "debootstrap failed (log $work/debootstrap.log)"; exit 1; }
echo "debootstrap: minbase bookworm $(cat "$root/etc/debian_version") in $(( $(date +%s) - t0 )) s;" \
     "python3 $(chroot "$root" sh -c 'command -v python3 || echo absent')"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -n "$ca" ] && cp "$ca" "$root/root/pip-ca.crt"
git clone -q . "$root/root/powerscale-dgx-ra" || exit 1
for d in proc sys dev; do mount --bind "/$d" "$root/$d" && mounted+=("$root/$d"); done
step install yes "./scripts/install.sh"
step preflight-offline no ".venv/bin/ansible-playbook -i inventories/common -i inventories/production site.yml --tags preflight -e preflight_offline=true"
step install-again-offline no "./scripts/install.sh"
step install-lab-dev yes "./scripts/install.sh --lab --dev"
step install-lab-dev-again-offline no "./scripts/install.sh --lab --dev"
echo "fresh-debian-check: $([ $failed -eq 0 ] && echo PASS || echo FAIL) in $(( $(date +%s) - t0 )) s, at $(git rev-parse --short HEAD)"
exit $failed
