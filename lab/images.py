"""VM images for the lab: Debian 12 from Debian packages only, cached by a hash of the recipe.

Build, once per recipe:
  1. base rootfs: `debootstrap --variant=minbase bookworm`, then `apt-get install` (in a chroot) of what
     every VM needs: systemd, sshd, iproute2, ping, Python 3 and Debian's cloud kernel;
  2. per role (dgx, storage, switch): a copy of the base, the role's packages from apt in the chroot,
     Python wheels (torch) from a wheelhouse that pip downloaded on the host (the host's pip carries
     the proxy CA; pip in the chroot would fail TLS), the lab's boot-time files (image_files.py);
  3. the role's root filesystem as a raw ext4 disk made with `mkfs.ext4 -d` (no loop device, no
     qemu-nbd: both are missing in containers), plus the kernel and initrd copied out for -kernel/-initrd.
Each VM then boots a qcow2 copy-on-write overlay on top of its role's raw disk.

Cache layout (LAB_CACHE_DIR, default ~/.cache/powerscale-dgx-ra/lab):
  base-<hash>/rootfs/                      debootstrap + common packages
  wheelhouse-<hash>/                       pip download of the role's wheels
  images/<role>-<hash>/{root.raw,vmlinuz,initrd.img,manifest.json}
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import image_files

# Bump when the build procedure changes in a way the recipe fields do not capture.
BUILDER_VERSION = 3

Log = Callable[[str], None]


@dataclass(frozen=True)
class RoleRecipe:
    role: str
    packages: tuple[str, ...]
    wheels: tuple[str, ...] = ()
    disk_gb: int = 4


@dataclass(frozen=True)
class Recipe:
    suite: str = "bookworm"
    mirror: str = "http://deb.debian.org/debian"
    security_mirror: str = "http://deb.debian.org/debian-security"
    variant: str = "minbase"
    python_version: str = "3.11"  # bookworm's python3: the wheelhouse targets it
    base_packages: tuple[str, ...] = (
        "systemd-sysv", "udev", "dbus", "openssh-server", "iproute2", "iputils-ping", "ethtool",
        "python3", "python3-apt", "linux-image-cloud-amd64", "initramfs-tools", "kmod", "procps",
        "ca-certificates", "curl", "less", "netbase", "tar", "gzip",
    )
    roles: tuple[RoleRecipe, ...] = field(default_factory=lambda: DEFAULT_ROLES)

    def role(self, name: str) -> RoleRecipe:
        for r in self.roles:
            if r.role == name:
                return r
        raise KeyError(f"image recipe has no role {name!r} (roles: {', '.join(r.role for r in self.roles)})")


DEFAULT_ROLES: tuple[RoleRecipe, ...] = (
    RoleRecipe(
        "dgx",
        ("python3-pip", "fio", "iperf3", "nfs-common", "docker.io", "iputils-ping",
         # community.docker needs requests on the node; fuser (psmisc) names who holds a busy mount
         "python3-requests", "psmisc",
         # the launch engines (docs/launch-engines.md): Slurm 22.05 with MUNGE, its PMIx plugin's library
         # (mpi_pmix_v4.so opens pmix2/lib/libpmix.so, which only libpmix-dev ships), Open MPI 4.1
         "slurmd", "slurmctld", "slurm-client", "munge", "libpmix-dev", "openmpi-bin",
         # LLDP on the storage NICs (the cabling stage; a site's DGX gets it from the dgx_host role)
         "lldpd"),
        wheels=("torch==2.13.0", "numpy"),
        disk_gb=12,
    ),
    RoleRecipe("storage", ("nfs-kernel-server", "xfsprogs", "iperf3", "python3", "iputils-ping", "lldpd"), disk_gb=4),
    # frr-pythontools: frr-reload.py, which Cumulus ships and `systemctl reload frr` runs; without it the
    # fabric role would take its vtysh -b fallback, a path no real switch takes.
    # lldpd: every Cumulus Linux release runs it (the cabling stage reads its neighbour table)
    RoleRecipe("switch", ("ifupdown2", "frr", "frr-pythontools", "bridge-utils", "python3", "iputils-ping",
                          "iperf3", "lldpd"), disk_gb=4),
)


def _digest(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _files_payload(files: tuple[image_files.ImageFile, ...]) -> list[list[object]]:
    return [[f.path, f.mode, f.content] for f in files]


def base_hash(recipe: Recipe) -> str:
    """Hash of everything that goes into the base rootfs."""
    return _digest(
        {
            "builder": BUILDER_VERSION,
            "suite": recipe.suite,
            "mirror": recipe.mirror,
            "security": recipe.security_mirror,
            "variant": recipe.variant,
            "packages": sorted(recipe.base_packages),
        }
    )


def wheelhouse_hash(recipe: Recipe, role: str) -> str:
    return _digest({"python": recipe.python_version, "wheels": sorted(recipe.role(role).wheels)})


def role_hash(recipe: Recipe, role: str) -> str:
    """Hash of a role image: its base, packages, wheels, disk size and every file baked into it."""
    r = recipe.role(role)
    return _digest(
        {
            "base": base_hash(recipe),
            "role": asdict(r),
            "python": recipe.python_version,
            "common_files": _files_payload(image_files.COMMON_FILES),
            "role_files": _files_payload(image_files.ROLE_FILES.get(role, ())),
            "enable": [image_files.ENABLE_UNITS, image_files.ROLE_ENABLE_UNITS.get(role, ())],
            "disable": image_files.DISABLE_UNITS,
            "mask": image_files.MASK_UNITS,
            "scripts": image_files.ROLE_BUILD_SCRIPTS.get(role, ()),
        }
    )


def default_cache_dir() -> Path:
    env = os.environ.get("LAB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    root = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return root / "powerscale-dgx-ra" / "lab"


@dataclass(frozen=True)
class RoleImage:
    role: str
    key: str
    directory: Path

    @property
    def disk(self) -> Path:
        return self.directory / "root.raw"

    @property
    def kernel(self) -> Path:
        return self.directory / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.directory / "initrd.img"

    @property
    def manifest(self) -> Path:
        return self.directory / "manifest.json"

    def is_complete(self) -> bool:
        return self.manifest.is_file() and self.disk.is_file() and self.kernel.is_file() and self.initrd.is_file()


def role_image(cache_dir: Path, recipe: Recipe, role: str) -> RoleImage:
    key = role_hash(recipe, role)
    return RoleImage(role, key, cache_dir / "images" / f"{role}-{key}")


class BuildError(RuntimeError):
    pass


def _run(argv: list[str], log: Log, *, env: dict[str, str] | None = None, logfile: Path | None = None) -> None:
    """Run a build command; its output goes to the build log, and its tail into the error on failure."""
    full_env = dict(os.environ, DEBIAN_FRONTEND="noninteractive", LC_ALL="C.UTF-8", **(env or {}))
    proc = subprocess.run(argv, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if logfile is not None:
        with logfile.open("a") as fh:
            fh.write(f"$ {' '.join(argv)}\n{proc.stdout}\n")
    if proc.returncode != 0:
        tail = "\n".join(proc.stdout.splitlines()[-25:])
        raise BuildError(f"image build step failed (exit {proc.returncode}): {' '.join(argv)}\n{tail}")


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@contextlib.contextmanager
def _chroot_mounts(root: Path) -> Iterator[None]:
    """proc, sys, dev and dev/pts inside the chroot for the duration of the apt/dpkg steps."""
    mounted: list[Path] = []
    try:
        for src, rel, args in (
            ("proc", "proc", ["-t", "proc"]),
            ("sysfs", "sys", ["-t", "sysfs"]),
            ("/dev", "dev", ["--bind"]),
            ("/dev/pts", "dev/pts", ["--bind"]),
        ):
            target = root / rel
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", *args, src, str(target)], check=True)
            mounted.append(target)
        yield
    finally:
        for target in reversed(mounted):
            subprocess.run(["umount", "-l", str(target)], check=False)


def _write_files(root: Path, files: tuple[image_files.ImageFile, ...]) -> None:
    for f in files:
        dest = root / f.path.lstrip("/")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.is_symlink():
            dest.unlink()
        dest.write_text(f.content)
        dest.chmod(f.mode)


def _apt_install(root: Path, packages: tuple[str, ...], log: Log, logfile: Path) -> None:
    opts = ["-o", "Dpkg::Options::=--force-confdef", "-o", "Dpkg::Options::=--force-confold"]
    _run(["chroot", str(root), "apt-get", "update", "-qq"], log, logfile=logfile)
    _run(
        ["chroot", str(root), "apt-get", "install", "-y", "-qq", "--no-install-recommends", *opts, *packages],
        log,
        logfile=logfile,
    )


def _sources_list(recipe: Recipe) -> str:
    return (
        f"deb {recipe.mirror} {recipe.suite} main\n"
        f"deb {recipe.mirror} {recipe.suite}-updates main\n"
        f"deb {recipe.security_mirror} {recipe.suite}-security main\n"
    )


def _require_root(cache_dir: Path) -> None:
    if os.geteuid() != 0:
        raise BuildError(
            f"building the lab images needs root (debootstrap, chroot, mount) and the cache {cache_dir} has no "
            "image for this recipe: run `python -m lab build` as root (or with sudo), or point LAB_CACHE_DIR at a "
            "cache built by root"
        )


def build_base(cache_dir: Path, recipe: Recipe, log: Log) -> Path:
    """The shared base rootfs directory (debootstrap + common packages); built once per recipe."""
    key = base_hash(recipe)
    final = cache_dir / f"base-{key}"
    if (final / "done").is_file():
        return final / "rootfs"
    _require_root(cache_dir)
    with _lock(cache_dir / f"base-{key}.lock"):
        if (final / "done").is_file():
            return final / "rootfs"
        tmp = cache_dir / f"tmp-base-{key}"
        shutil.rmtree(tmp, ignore_errors=True)
        root = tmp / "rootfs"
        root.mkdir(parents=True)
        logfile = tmp / "build.log"
        t0 = time.monotonic()
        log(f"image: debootstrap {recipe.variant} {recipe.suite} (base {key}); log {logfile}")
        _run(
            ["debootstrap", f"--variant={recipe.variant}", recipe.suite, str(root), recipe.mirror],
            log,
            logfile=logfile,
        )
        (root / "etc/apt/sources.list").write_text(_sources_list(recipe))
        (root / "usr/sbin/policy-rc.d").write_text("#!/bin/sh\n# no service starts inside the image build\nexit 101\n")
        (root / "usr/sbin/policy-rc.d").chmod(0o755)
        shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
        # The initramfs settings must be in place before the kernel's postinst builds the initramfs.
        _write_files(root, tuple(f for f in image_files.COMMON_FILES if f.path.startswith("/etc/initramfs-tools/")))
        log(f"image: apt-get install base packages ({len(recipe.base_packages)})")
        with _chroot_mounts(root):
            _apt_install(root, recipe.base_packages, log, logfile)
            _run(["chroot", str(root), "apt-get", "clean"], log, logfile=logfile)
        shutil.rmtree(final, ignore_errors=True)
        tmp.rename(final)
        (final / "done").write_text(f"{time.monotonic() - t0:.0f}\n")
        log(f"image: base ready in {time.monotonic() - t0:.0f} s")
        return final / "rootfs"


def build_wheelhouse(cache_dir: Path, recipe: Recipe, role: str, log: Log) -> Path | None:
    """`pip download` of the role's wheels on the host (its pip has the proxy CA and the local indexes)."""
    wheels = recipe.role(role).wheels
    if not wheels:
        return None
    final = cache_dir / f"wheelhouse-{wheelhouse_hash(recipe, role)}"
    if (final / "done").is_file():
        return final
    tmp = final.with_name(final.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    log(f"image: pip download {' '.join(wheels)} (python {recipe.python_version}) into the wheelhouse")
    pyver = recipe.python_version
    abi = "cp" + pyver.replace(".", "")
    _run(
        [sys.executable, "-m", "pip", "download", "-q", "-d", str(tmp), "--only-binary=:all:",
         "--python-version", pyver, "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none",
         "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
         "--platform", "manylinux2014_x86_64", "--platform", "linux_x86_64", "--platform", "any", *wheels],
        log,
        logfile=cache_dir / "wheelhouse.log",
    )
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    (final / "done").write_text("ok\n")
    return final


def _finish_rootfs(root: Path, role: str, log: Log, logfile: Path) -> None:
    _write_files(root, image_files.COMMON_FILES + image_files.ROLE_FILES.get(role, ()))
    chroot = ["chroot", str(root)]
    _run([*chroot, "systemctl", "enable", *image_files.ENABLE_UNITS], log, logfile=logfile)
    _run([*chroot, "systemctl", "disable", *image_files.DISABLE_UNITS], log, logfile=logfile)
    _run([*chroot, "systemctl", "mask", *image_files.MASK_UNITS], log, logfile=logfile)
    # a role's own units last: they may turn back on what every image has off (the DGX's wait-online)
    if image_files.ROLE_ENABLE_UNITS.get(role):
        _run([*chroot, "systemctl", "enable", *image_files.ROLE_ENABLE_UNITS[role]], log, logfile=logfile)
    _run([*chroot, "update-initramfs", "-u", "-k", "all"], log, logfile=logfile)
    _run([*chroot, "passwd", "-l", "root"], log, logfile=logfile)
    _run([*chroot, "apt-get", "clean"], log, logfile=logfile)
    for script in image_files.ROLE_BUILD_SCRIPTS.get(role, ()):
        _run([*chroot, "/bin/sh", "-c", script], log, logfile=logfile)
    # Per-VM identity comes from the config disk / first boot: no shared host keys or machine-id.
    for key in (root / "etc/ssh").glob("ssh_host_*"):
        key.unlink()
    (root / "etc/machine-id").write_text("")
    with contextlib.suppress(FileNotFoundError):
        (root / "var/lib/dbus/machine-id").unlink()
    (root / "usr/sbin/policy-rc.d").unlink(missing_ok=True)
    shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
    (root / "var/lib/apt/lists/partial").mkdir(parents=True, exist_ok=True)
    shutil.rmtree(root / "tmp", ignore_errors=True)
    (root / "tmp").mkdir(mode=0o1777)
    (root / "tmp").chmod(0o1777)


def _extract_kernel(root: Path, dest: RoleImage) -> str:
    kernels = sorted((root / "boot").glob("vmlinuz-*"))
    if not kernels:
        raise BuildError(f"no kernel under {root / 'boot'}: linux-image-cloud-amd64 did not install")
    kernel = kernels[-1]
    version = kernel.name.removeprefix("vmlinuz-")
    initrd = root / "boot" / f"initrd.img-{version}"
    if not initrd.is_file():
        raise BuildError(f"no initrd for kernel {version} under {root / 'boot'}")
    shutil.copyfile(kernel, dest.kernel)
    shutil.copyfile(initrd, dest.initrd)
    return version


def build_role(cache_dir: Path, recipe: Recipe, role: str, log: Log) -> RoleImage:
    """A role's disk image, kernel and initrd; returns at once when the cache already holds them."""
    image = role_image(cache_dir, recipe, role)
    if image.is_complete():
        return image
    _require_root(cache_dir)
    base_root = build_base(cache_dir, recipe, log)
    wheelhouse = build_wheelhouse(cache_dir, recipe, role, log)
    with _lock(cache_dir / f"{role}-{image.key}.lock"):
        if image.is_complete():
            return image
        t0 = time.monotonic()
        tmp = cache_dir / f"tmp-{role}-{image.key}"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        logfile = tmp / "build.log"
        root = tmp / "rootfs"
        log(f"image: {role}: copy base, apt-get install {' '.join(recipe.role(role).packages)}; log {logfile}")
        _run(["cp", "-a", "--reflink=auto", str(base_root), str(root)], log, logfile=logfile)
        (root / "usr/sbin/policy-rc.d").write_text("#!/bin/sh\nexit 101\n")
        (root / "usr/sbin/policy-rc.d").chmod(0o755)
        shutil.copyfile("/etc/resolv.conf", root / "etc/resolv.conf")
        with _chroot_mounts(root):
            _apt_install(root, recipe.role(role).packages, log, logfile)
            if wheelhouse is not None:
                log(f"image: {role}: pip install --no-index {' '.join(recipe.role(role).wheels)}")
                shutil.copytree(wheelhouse, root / "tmp/wheels")
                _run(
                    ["chroot", str(root), "python3", "-m", "pip", "install", "-q", "--no-index",
                     "--find-links", "/tmp/wheels", "--break-system-packages", "--no-cache-dir",
                     *recipe.role(role).wheels],
                    log,
                    logfile=logfile,
                )
            _finish_rootfs(root, role, log, logfile)
        out = tmp / "image"
        out.mkdir()
        staged = RoleImage(role, image.key, out)
        version = _extract_kernel(root, staged)
        log(f"image: {role}: mkfs.ext4 -d ({recipe.role(role).disk_gb} GiB sparse disk)")
        _run(
            ["mkfs.ext4", "-q", "-F", "-L", f"lab-{role}", "-E", "root_owner=0:0", "-d", str(root),
             str(staged.disk), f"{recipe.role(role).disk_gb}G"],
            log,
            logfile=logfile,
        )
        manifest = {
            "role": role,
            "key": image.key,
            "kernel": version,
            "recipe": asdict(recipe.role(role)),
            "base": base_hash(recipe),
            "built_s": round(time.monotonic() - t0, 1),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        staged.manifest.write_text(json.dumps(manifest, indent=2) + "\n")
        shutil.copyfile(logfile, out / "build.log")
        image.directory.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(image.directory, ignore_errors=True)
        out.rename(image.directory)
        shutil.rmtree(tmp, ignore_errors=True)
        log(f"image: {role} ready in {time.monotonic() - t0:.0f} s ({image.directory})")
        return image


def build_all(cache_dir: Path, recipe: Recipe, roles: list[str], log: Log) -> dict[str, RoleImage]:
    return {role: build_role(cache_dir, recipe, role, log) for role in roles}


def prune(cache_dir: Path, recipe: Recipe, log: Log) -> list[Path]:
    """Remove cached bases, wheelhouses and images that the current recipe no longer uses."""
    keep = {f"base-{base_hash(recipe)}"}
    keep |= {f"wheelhouse-{wheelhouse_hash(recipe, r.role)}" for r in recipe.roles if r.wheels}
    keep_images = {f"{r.role}-{role_hash(recipe, r.role)}" for r in recipe.roles}
    removed: list[Path] = []
    candidates = [p for p in cache_dir.iterdir() if p.is_dir() and p.name.startswith(("base-", "wheelhouse-"))] if cache_dir.is_dir() else []
    if (cache_dir / "images").is_dir():
        candidates += [p for p in (cache_dir / "images").iterdir() if p.is_dir() and p.name not in keep_images]
    for path in candidates:
        if path.name in keep or (path.parent.name == "images" and path.name in keep_images):
            continue
        # The same lock the builder holds: never pull a directory from under a build or a running `up`.
        with _lock(cache_dir / f"{path.name}.lock"):
            shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
        log(f"image: pruned {path}")
    return removed
