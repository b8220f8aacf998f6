"""The DGX kernel tuning as data: one sysctl.d file and the live values, compared and planned in one place.

Pure functions (no I/O); library/dgx_sysctl.py reads the file and /proc/sys and applies the plan. The file
format is sysctl.d(5): ``key = value`` lines, ``#``/``;`` comments; the module writes ``key=value`` (as
ansible.posix.sysctl does, so a file it wrote reads as unchanged). Live values compare as whitespace-separated
fields: the kernel prints ``net.ipv4.tcp_rmem`` with tabs (``4096\\t87380\\t134217728``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ansible.module_utils.cumulus_switch import set_lines
from ansible.module_utils.dgx_readiness import normalize_sysctl as normalize

COMMENT = ("#", ";")


def proc_path(key: str) -> str:
    """/proc/sys path of a dotted key (``net.ipv4.tcp_rmem`` -> ``/proc/sys/net/ipv4/tcp_rmem``).

    A key given with slashes is taken as is. Raises ValueError for a key that could escape /proc/sys."""
    parts = key.replace(".", "/").split("/") if "/" not in key else key.split("/")
    if not key or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"sysctl key {key!r} is not a valid name (expected e.g. net.core.rmem_max)")
    return "/proc/sys/" + "/".join(parts)


def _line_key(line: str) -> str | None:
    stripped = line.strip()
    if not stripped or stripped.startswith(COMMENT) or "=" not in stripped:
        return None
    return stripped.split("=", 1)[0].strip().lstrip("-")


def render_file(existing: str, settings: dict[str, object]) -> str:
    """The file with every key of ``settings`` set to its value, everything else kept (cumulus_switch.set_lines,
    the one KEY=VALUE merge: a key's first line rewritten in place, its later lines, which would override it at
    boot, dropped; keys not in the file appended in the order given). Lines for other keys and comments are
    kept: the file may hold settings this role does not own."""
    return set_lines(existing, {k: normalize(v) for k, v in settings.items()}, key_of=_line_key)


@dataclass
class SysctlPlan:
    """What differs: the file's new text (None when it is already right) and the live keys to set."""

    file_text: str | None
    live: dict[str, tuple[str, str]] = field(default_factory=dict)  # key -> (live now, wanted)

    @property
    def changed(self) -> bool:
        return self.file_text is not None or bool(self.live)


def live_drift(live: dict[str, str], settings: dict[str, object]) -> dict[str, tuple[str, str]]:
    """The keys whose live value (key -> text read from /proc/sys) differs: key -> (live, wanted)."""
    return {k: (normalize(live[k]), normalize(v)) for k, v in settings.items() if normalize(live[k]) != normalize(v)}


def plan(existing: str | None, live: dict[str, str], settings: dict[str, object]) -> SysctlPlan:
    """Compare the file (None: absent) and the live values with ``settings``."""
    text = render_file(existing or "", settings)
    return SysctlPlan(file_text=None if existing is not None and text == existing else text,
                      live=live_drift(live, settings))


# Kernel modules that provide sysctl keys (sunrpc for sunrpc.*). Read as community.general.modprobe reads them
# (its `persistent: present` writes /etc/modules-load.d/<name>.conf and `options <name> <k=v>` lines in
# /etc/modprobe.d/<name>.conf), so that a node it converged reads as converged here and the other way round.


def _module_line(name: str, line: str) -> bool:
    return line.split("#", 1)[0].split(";", 1)[0].strip() == name


def _option_values(name: str, line: str) -> set[str]:
    fields = line.split("#", 1)[0].split(";", 1)[0].split()
    if len(fields) < 3 or fields[0] != "options" or fields[1] != name:
        return set()
    return {f for f in fields[2:] if "=" in f}


def module_pending(name: str, params: str, loaded: bool, modules_load: dict[str, str],
                   modprobe_d: dict[str, str]) -> list[str]:
    """Why kernel module ``name`` is not yet loaded and persistent with ``params`` (empty: nothing to do).

    ``modules_load`` and ``modprobe_d`` are the texts of the files under /etc/modules-load.d and /etc/modprobe.d
    (path -> text); ``loaded`` says whether the running kernel has the module (/sys/module/<name>)."""
    reasons = []
    if not loaded:
        reasons.append(f"{name} is not loaded")
    if not any(_module_line(name, line) for text in modules_load.values() for line in text.splitlines()):
        reasons.append(f"{name} is not in /etc/modules-load.d (not loaded at boot)")
    permanent = {v for text in modprobe_d.values() for line in text.splitlines() for v in _option_values(name, line)}
    if permanent != set(params.split()):
        reasons.append(f"/etc/modprobe.d gives {name} options {sorted(permanent)}, wanted {sorted(params.split())}")
    return reasons
