"""Files baked into the lab's VM images (part of the image recipe: changing one rebuilds the images).

Per-VM settings (hostname, SSH keys, NIC names and addresses) are NOT baked in: every VM gets a small
read-only "config disk" (a plain tar archive used as a raw virtio disk, serial `labcfg`) that
`lab-config.service` unpacks over / early at every boot, before udev names the NICs and before
systemd-networkd configures them. That keeps one image per role and a copy-on-write overlay per VM,
without qemu-nbd, loop devices or cloud-init.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImageFile:
    path: str
    content: str
    mode: int = 0o644


LAB_CONFIG_SCRIPT = """#!/bin/sh
# Unpacks this VM's config disk (a tar archive on the virtio disk whose serial is `labcfg`) over /.
# Runs before systemd-udevd so that the .link files it writes name the NICs by MAC address.
set -eu
dev=""
for s in /sys/block/vd*/serial; do
  [ -r "$s" ] || continue
  if [ "$(cat "$s")" = "labcfg" ]; then dev="/dev/$(basename "$(dirname "$s")")"; fi
done
if [ -z "$dev" ]; then
  echo "lab-config: no config disk (serial labcfg) attached; keeping the image defaults" >&2
  exit 0
fi
tar -x --no-overwrite-dir --numeric-owner -f "$dev" -C /
hostname "$(cat /etc/hostname)"
echo "lab-config: applied $dev for $(cat /etc/hostname)"
"""

LAB_CONFIG_UNIT = """[Unit]
Description=Apply the lab's per-VM configuration disk (hostname, keys, NIC names and addresses)
DefaultDependencies=no
After=systemd-remount-fs.service
Before=systemd-udevd.service systemd-udev-trigger.service systemd-networkd.service sysinit.target ssh.service
ConditionPathExists=!/etc/lab/no-config-disk

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/lab-config

[Install]
WantedBy=sysinit.target
"""

# Ports listed in /etc/lab/links-up (switch ports) are brought up without any address: networkd leaves
# them alone (Unmanaged=yes), so the fabric role's ifupdown2 configuration owns them entirely.
LINKS_UP_SCRIPT = """#!/bin/sh
set -eu
[ -r /etc/lab/links-up ] || exit 0
for name in $(cat /etc/lab/links-up); do
  i=0
  while [ ! -e "/sys/class/net/$name" ] && [ "$i" -lt 60 ]; do sleep 0.5; i=$((i + 1)); done
  ip link set "$name" up
done
"""

LINKS_UP_UNIT = """[Unit]
Description=Bring the lab switch ports up (no address, no bridge: the fabric stage configures them)
After=systemd-networkd.service systemd-udev-trigger.service

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/sbin/lab-links-up

[Install]
WantedBy=multi-user.target
"""

SSHD_CONFIG = """# Lab: root logs in with the lab key only; one host key, written per VM by the config disk.
PermitRootLogin prohibit-password
PasswordAuthentication no
HostKey /etc/ssh/ssh_host_ed25519_key
UseDNS no
"""

AUTOLOGIN = """[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
"""

COMMON_FILES: tuple[ImageFile, ...] = (
    ImageFile("/usr/local/sbin/lab-config", LAB_CONFIG_SCRIPT, 0o755),
    ImageFile("/etc/systemd/system/lab-config.service", LAB_CONFIG_UNIT),
    ImageFile("/usr/local/sbin/lab-links-up", LINKS_UP_SCRIPT, 0o755),
    ImageFile("/etc/systemd/system/lab-links-up.service", LINKS_UP_UNIT),
    ImageFile("/etc/ssh/sshd_config.d/lab.conf", SSHD_CONFIG),
    # The serial console (python -m lab console NODE) logs in as root: it is reachable only through a
    # unix socket inside the run directory (mode 0700).
    ImageFile("/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf", AUTOLOGIN),
    ImageFile("/etc/initramfs-tools/conf.d/lab.conf", "MODULES=list\nCOMPRESS=gzip\n"),
    # Only what mounting the root disk needs: virtio_net stays out of the initramfs, so NICs appear
    # after lab-config has written the .link files that name them.
    ImageFile("/etc/initramfs-tools/modules", "virtio_pci\nvirtio_blk\next4\n"),
    ImageFile("/etc/fstab", "/dev/vda / ext4 rw,noatime,errors=remount-ro 0 1\n"),
    ImageFile("/etc/hostname", "lab\n"),
    ImageFile("/etc/resolv.conf", "# the lab has no DNS: every name it needs is in /etc/hosts\n"),
    ImageFile(
        "/etc/systemd/journald.conf.d/lab.conf", "[Journal]\nSystemMaxUse=64M\nForwardToConsole=no\n"
    ),
    ImageFile("/etc/sysctl.d/60-lab.conf", "kernel.panic = 10\nkernel.printk = 4 4 1 7\n"),
)

ONEFS_SIM_UNIT = """[Unit]
Description=OneFS Platform API simulator (lab stand-in for the PowerScale cluster's PAPI)
After=network-online.target nfs-server.service
Wants=network-online.target
RequiresMountsFor=/ifs
ConditionPathExists=/opt/onefs-sim/onefs_sim/__init__.py

[Service]
WorkingDirectory=/opt/onefs-sim
ExecStart=/usr/bin/python3 -m onefs_sim --backend knfsd --listen 0.0.0.0:8080 --cert /etc/onefs-sim/server.pem --key /etc/onefs-sim/server.key --user svc-ansible --password-file /etc/onefs-sim/password --state /var/lib/onefs-sim/state.json --ifs /ifs
StateDirectory=onefs-sim
Restart=on-failure
RestartSec=3

[Install]
WantedBy=multi-user.target
"""

# The DGX image's Slurm and MUNGE units take their settings from the config disk (lab/vmconfig.py engine_files):
# only the VM that the config disk marks runs slurmctld, and the munge key, unpacked as root at every boot, is
# handed to munged's user first (munged refuses a key file it does not own).
SLURMCTLD_DROPIN = """[Unit]
# lab: the config disk of the first DGX carries this marker; the other DGX VMs run slurmd only
ConditionPathExists=/etc/lab/slurmctld
After=lab-config.service
"""
SLURMD_DROPIN = """[Unit]
After=lab-config.service
"""
MUNGE_DROPIN = """[Unit]
After=lab-config.service
ConditionPathExists=/etc/munge/munge.key

[Service]
ExecStartPre=+/bin/chown munge:munge /etc/munge/munge.key
ExecStartPre=+/bin/chmod 0400 /etc/munge/munge.key
"""

# lldpd in every image, speaking real LLDP over the lab's cables (the cabling stage reads it; docs/cabling.md).
# The switch sends its interface name as port id, as Cumulus Linux does (NVUE's `nv show interface lldp` lists a
# Cumulus neighbour's port as swp49, a Linux server's as its MAC: docs.nvidia.com cumulus-linux-5x, Link Layer
# Discovery Protocol). A host sends only on its storage NICs: a provisioned DGX or storage node that sent on the
# compute-fabric stand-in (cfab0, one shared segment) would show every other DGX as a neighbour the design lacks.
LLDPD_SWITCH = "# lab: the port id is the interface name, as on Cumulus Linux\nconfigure lldp portidsubtype ifname\n"
LLDPD_HOST = "# lab: LLDP on the storage NICs only (the dgx_host role writes the same for a real DGX)\n" \
             "configure system interface pattern storage*\n"

ROLE_FILES: dict[str, tuple[ImageFile, ...]] = {
    "dgx": (
        ImageFile("/etc/lldpd.d/lab.conf", LLDPD_HOST),
        ImageFile("/etc/systemd/system/slurmctld.service.d/lab.conf", SLURMCTLD_DROPIN),
        ImageFile("/etc/systemd/system/slurmd.service.d/lab.conf", SLURMD_DROPIN),
        ImageFile("/etc/systemd/system/munge.service.d/lab.conf", MUNGE_DROPIN),
    ),
    "storage": (
        # /ifs: the data disk `lab up` makes (XFS, label ifs); project quotas back the OneFS quotas.
        # Not `nofail`: boot (and so SSH, NFS, the OneFS simulator) waits for /ifs. Under TCG on a loaded host
        # udev may take minutes to label the disk, hence the long device timeout.
        ImageFile(
            "/etc/fstab",
            "/dev/vda / ext4 rw,noatime,errors=remount-ro 0 1\n"
            "LABEL=ifs /ifs xfs defaults,prjquota,x-systemd.device-timeout=600s 0 2\n",
        ),
        ImageFile("/etc/systemd/system/onefs-sim.service", ONEFS_SIM_UNIT),
        ImageFile("/etc/lldpd.d/lab.conf", LLDPD_HOST),
        ImageFile("/etc/exports", "# managed by the storage stage (OneFS API simulator, knfsd backend)\n"),
    ),
    "switch": (
        ImageFile("/etc/lldpd.d/lab.conf", LLDPD_SWITCH),
        ImageFile(
            "/etc/network/interfaces",
            "# Cumulus-style ifupdown2 configuration: the fabric stage writes the switch ports here.\n"
            "# mgmt0 belongs to systemd-networkd in the lab (qemu user network, static 10.0.2.15).\n"
            "auto lo\niface lo inet loopback\n\nsource /etc/network/interfaces.d/*\n",
        ),
    ),
}

# Services enabled / disabled in every image. Timers that would reach for the network are off: the
# VMs have no route off the machine.
ENABLE_UNITS = ("systemd-networkd.service", "lab-config.service", "lab-links-up.service", "ssh.service")
DISABLE_UNITS = (
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "man-db.timer",
    "e2scrub_all.timer",
    "e2scrub_reap.service",
    "fstrim.timer",
    "systemd-networkd-wait-online.service",
)
# Early-boot module loads for hardware a lab VM does not have (no GPU, no EFI, no device-mapper users):
# each costs seconds of emulated CPU under TCG, serialised with the rest of early boot.
MASK_UNITS = ("modprobe@drm.service", "modprobe@efi_pstore.service", "modprobe@dm_mod.service")
ROLE_ENABLE_UNITS: dict[str, tuple[str, ...]] = {
    # DGX OS (Ubuntu, systemd-networkd) waits for the network before remote mounts: so does the lab's DGX, whose
    # fstab mounts the exports at boot (its storage NICs are RequiredForOnline, lab/vmconfig.py)
    "dgx": ("docker.service", "systemd-networkd-wait-online.service", "munge.service", "slurmd.service",
            "slurmctld.service", "lldpd.service"),
    "storage": ("nfs-server.service", "onefs-sim.service", "lldpd.service"),
    "switch": ("frr.service", "lldpd.service"),
}

# The switch image models a Cumulus Linux whose Python Ansible refuses: Cumulus Linux 4.0-4.4 and 5.0-5.8
# ship Python 3.7.3 and ansible-core 2.19 runs modules only on Python >= 3.8, so on the reference's release
# (4.2.1) the fabric role must work without Python on the switch (roles/sn3700v: everything over `raw`).
# ifupdown2 and frr-reload.py are Python programs, as on Cumulus, so the interpreter stays, out of PATH:
# the binary moves to /usr/lib/cumulus-python/bin (Python still finds its standard library under /usr, the
# first prefix above that directory with lib/python3.X/os.py), every executable script whose shebang names
# /usr/bin/python3 (or `env python3`) is rewritten to it, and /usr/bin/python3* are gone. Ansible's
# interpreter discovery (`command -v python3.X`, /usr/bin/python3, ...) finds nothing there. The build
# fails unless ifupdown2 and frr-reload.py still start and no python is left in PATH.
SWITCH_PYTHON_DIR = "/usr/lib/cumulus-python/bin"
SWITCH_PYTHON_SCRIPT = f"""set -eu
dest={SWITCH_PYTHON_DIR}
real=$(readlink -f /usr/bin/python3)
mkdir -p "$dest"
mv "$real" "$dest/${{real##*/}}"
ln -sf "${{real##*/}}" "$dest/python3"
rm -f /usr/bin/python3 /usr/bin/python3-config
find /usr/bin /usr/sbin /usr/lib /usr/share /usr/local /etc -xdev -type f -perm /111 -size -4M 2>/dev/null |
while IFS= read -r f; do
  if head -n 1 "$f" 2>/dev/null | grep -aqE '^#! *(/usr/bin/python3(\\.[0-9]+)?|/usr/bin/env +python3(\\.[0-9]+)?)([[:space:]]|$)'; then
    sed -i -E '1s@^#! *(/usr/bin/python3(\\.[0-9]+)?|/usr/bin/env +python3(\\.[0-9]+)?)@#!'"$dest"'/python3@' "$f"
  fi
done
for name in python3 python3.11 python; do
  if PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin command -v "$name"; then
    echo "lab switch image: $name is still in PATH" >&2; exit 1
  fi
done
head -n 1 /usr/sbin/ifreload | grep -q "$dest/python3"
/usr/sbin/ifquery --help >/dev/null
head -n 1 /usr/lib/frr/frr-reload.py | grep -q "$dest/python3"
/usr/lib/frr/frr-reload.py --help >/dev/null
"""
# Shell scripts run in the chroot at the end of a role's build (part of the recipe: changing one rebuilds).
ROLE_BUILD_SCRIPTS: dict[str, tuple[str, ...]] = {"switch": (SWITCH_PYTHON_SCRIPT,)}
