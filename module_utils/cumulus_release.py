"""What differs between Cumulus Linux releases, for the sn3700v role, its modules and preflight (pure functions).

One home for every per-release rule. Each rule names the release(s) it comes from; the sources are the
Cumulus Linux user guides per release (CumulusNetworks/docs, ``content/cumulus-linux-<NN>/``) and the real
outputs in ``tests/fixtures/cumulus/real/`` (see SOURCES there).

Learning the release (either source gives a ``Release``):

- ``release_from_lsb(text)``: ``/etc/lsb-release`` (``DISTRIB_RELEASE=4.2.1``), what the files method reads
  over SSH.
- ``release_from_nvue_system(body)``: ``GET /nvue_v1/system`` (``{"build": "Cumulus Linux 5.4.0", ...}``),
  what the nvue method reads.
- ``parse_release("5.9.2")`` for an inventory value (``sn3700v_cumulus_release``).

The API, each taking a ``Release``:

==========================================  =================================================================
``breakout_syntax(r)``                      ``"speed"`` up to 5.3 (ports.conf ``1=4x25G``, NVUE ``breakout
                                            4x25G``); ``"lanes"`` from 5.4 (``1=4x``, NVUE ``breakout 4x``,
                                            the speed set on each lane ``swp1s0..s3``).
``breakout_parts(r, mode)``                 ``("4x25G", None)`` or ``("4x", "25G")``: what ports.conf / NVUE
                                            take for the parent, and the speed each lane must be given.
``python_version(r)``                       the switch's ``/usr/bin/python3``: 3.7 on 4.0-4.4 and 5.0-5.8
                                            (Debian 10), 3.11 from 5.9 (Debian 12).
``supports_files_method_with_python(r)``    ansible-core 2.19 modules run on the switch (Python >= 3.8):
                                            False on 4.x and 5.0-5.8, True from 5.9.
``supports_nvue(r)``                        the NVUE REST API exists: 5.0 and later.
``supported_methods(r)``                    ``("files",)`` on 4.x (agentless files method: raw SSH, no
                                            Python), ``("files", "nvue")`` on 5.x.
``nvue_api_default_listen(r)``              ``"localhost"`` on 5.0-5.5 (nginx ``listen localhost:8765``
                                            until the site edits nvue.conf), ``"all"`` from 5.6.
``nvue_password_gate(r)``                   True from 5.6: HTTP 403 until the ``cumulus`` password is changed.
``nvue_apply_is_saved(r)``                  False up to 5.8: an applied revision is lost at reboot unless
                                            ``PATCH /revision/applied {"state": "save"}``; True from 5.9.
``nvue_keys(r)``                            the NVUE key names that 5.15 renamed (``NvueKeys``).
``nvue_reports_oper_status(r)``             ``link.oper-status`` is documented from 5.11.
``ports_conf_value(r, mode)``               the ``/etc/cumulus/ports.conf`` value for a breakout mode.
==========================================  =================================================================

Reading ``/etc/cumulus/ports.conf``: ``parse_ports_conf(text)`` -> ``{"swp1": "4x25G", ...}`` (raises on a line
that is neither a comment nor ``N=value``); ``breakout_value_syntax(value)`` says which syntax a value is in.

For the files method (agentless, over raw SSH): read ``/etc/lsb-release`` -> ``release_from_lsb``; write
ports.conf with ``ports_conf_value`` and, where ``breakout_parts`` gives a lane speed, ``link-speed`` on each lane;
``link-fec`` from ``fec_for_forced_speed`` wherever ``link-speed`` is forced; ``supports_files_method_with_python``
says whether Ansible modules could run on the switch at all.

Releases before 4.0 (3.7: NCLU, Python 2/3.5, no ``bridge -j``) and after the newest one known here are not
modelled: ``known(r)`` is False, and preflight refuses them rather than guessing.

FEC (``fec_for_forced_speed``) is not a release rule but a Spectrum one: with the speed forced (auto-negotiation
off) both ends must use the same FEC, and the firmware's automatic choice is not made for a forced port. Every
forced speed therefore needs an explicit FEC (CL 4.x-5.x "Switch Port Attributes", FEC section).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

OLDEST = (4, 0)
NEWEST = (5, 15)  # the newest release whose guide this model was checked against
_VERSION_RE = re.compile(r"(?<![0-9.])([0-9]+)\.([0-9]+)(?:\.([0-9]+))?")
# FEC values Cumulus takes (ifupdown2 link-fec / NVUE link.fec). "auto" is not one to force: the 4.x-5.x guides warn
# that configuring fec auto makes the link flap at every ifreload / apply.
FEC_MODES = ("rs", "baser", "off")


class ReleaseError(ValueError):
    """A release string that names no Cumulus Linux release."""


@dataclass(frozen=True, order=True)
class Release:
    major: int
    minor: int
    patch: int = 0

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}.{self.patch}"

    @property
    def line(self) -> tuple[int, int]:
        return (self.major, self.minor)


def parse_release(value: Any) -> Release:
    """'4.2.1', '5.9', 'Cumulus Linux 5.4.0' -> Release; anything else raises ReleaseError."""
    match = _VERSION_RE.search(str(value if value is not None else ""))
    if not match:
        raise ReleaseError(f"{value!r} is not a Cumulus Linux release like 4.2.1 or 5.9.2")
    return Release(int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def release_from_lsb(text: str) -> Release:
    """The release in /etc/lsb-release (DISTRIB_RELEASE=..., else DISTRIB_DESCRIPTION="Cumulus Linux X")."""
    fields = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    if "cumulus" not in fields.get("DISTRIB_ID", "").lower():
        raise ReleaseError(f"/etc/lsb-release is not Cumulus Linux's (DISTRIB_ID={fields.get('DISTRIB_ID')!r})")
    if not (fields.get("DISTRIB_RELEASE") or fields.get("DISTRIB_DESCRIPTION")):
        raise ReleaseError("/etc/lsb-release names Cumulus Linux but no release (no DISTRIB_RELEASE or "
                           "DISTRIB_DESCRIPTION line): is the file cut?")
    return parse_release(fields.get("DISTRIB_RELEASE") or fields.get("DISTRIB_DESCRIPTION"))


def release_from_nvue_system(body: Any) -> Release:
    """The release in GET /nvue_v1/system ({"build": "Cumulus Linux 5.4.0", ...})."""
    build = body.get("build") if isinstance(body, dict) else None
    if not isinstance(build, str) or "cumulus linux" not in build.lower():
        raise ReleaseError(f"NVUE /system answered no Cumulus Linux build: {build!r}")
    return parse_release(build)


def known(release: Release) -> bool:
    return OLDEST <= release.line <= NEWEST


def breakout_syntax(release: Release) -> str:
    """'speed' (N=4x25G, NVUE breakout 4x25G) up to 5.3; 'lanes' (N=4x, speed per lane) from 5.4."""
    return "speed" if release.line <= (5, 3) else "lanes"


def breakout_parts(release: Release, mode: str) -> tuple[str, str | None]:
    """The parent's breakout value and each lane's speed (None: leave the lanes' speed alone).

    '4x25G' -> ('4x25G', None) up to 5.3, ('4x', '25G') from 5.4; 'disabled' / 'loopback' / '1x' unchanged."""
    match = re.match(r"^([1248]x)([0-9]+G)?$", mode)
    if not match:
        return mode, None
    if breakout_syntax(release) == "speed":
        return mode, None
    return match.group(1), match.group(2)


def ports_conf_value(release: Release, mode: str) -> str:
    """What /etc/cumulus/ports.conf takes for a breakout mode on this release ('4x25G' up to 5.3, '4x' from 5.4)."""
    return breakout_parts(release, mode)[0]


def files_breakouts(lsb_release: str | None, breakouts: dict[str, str], expected: str = "") -> dict[str, Any]:
    """What the files method writes for the plan's breakouts on the switch whose /etc/lsb-release this is:
    {"release", "syntax", "ports_conf": {"49": value}, "lane_speeds": {"swp49": "25G" or None}}. Raises
    ReleaseError, naming the fix, when the release cannot be known, is not modelled, or is not the one the
    inventory says (expected, sn3700v_cumulus_release)."""
    if lsb_release is None:
        raise ReleaseError("/etc/lsb-release is missing: the switch's Cumulus Linux release (and so the ports.conf "
                           "breakout syntax) cannot be known")
    release = release_from_lsb(lsb_release)
    if not known(release):
        raise ReleaseError(f"Cumulus Linux {release} is not modelled (known: {'.'.join(map(str, OLDEST))} to "
                           f"{'.'.join(map(str, NEWEST))}): check its guide's breakout syntax first")
    if expected and parse_release(expected).line != release.line:
        raise ReleaseError(f"the switch runs Cumulus Linux {release}, the inventory says {expected} "
                           "(sn3700v_cumulus_release)")
    parts = {port: breakout_parts(release, mode) for port, mode in sorted(breakouts.items())}
    return {"release": str(release), "syntax": breakout_syntax(release),
            "ports_conf": {port[3:] if port.startswith("swp") else port: value
                           for port, (value, _unused) in parts.items()},
            "lane_speeds": {port: lane for port, (_unused, lane) in parts.items()}}


_PORTS_LINE_RE = re.compile(r"^([0-9]+)=([0-9A-Za-z/]+)$")


def parse_ports_conf(text: str) -> dict[str, str]:
    """/etc/cumulus/ports.conf as {"swpN": value}; comments and blank lines skipped, anything else refused."""
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _PORTS_LINE_RE.match(line)
        if not match:
            raise ReleaseError(f"ports.conf line {number} is not PORT=VALUE: {raw!r}")
        out[f"swp{match.group(1)}"] = match.group(2)
    return out


def breakout_value_syntax(value: str) -> str | None:
    """'speed' for 4x25G/2x50G, 'lanes' for 4x/2x, None for values both syntaxes share (disabled, 1x, 100G)."""
    if re.fullmatch(r"[248]x[0-9]+G", value):
        return "speed"
    if re.fullmatch(r"[248]x", value):
        return "lanes"
    return None


def python_version(release: Release) -> tuple[int, int]:
    """The switch's python3: 3.7 on Debian 10 based releases (4.0-4.4, 5.0-5.8), 3.11 from 5.9 (Debian 12)."""
    return (3, 11) if release.line >= (5, 9) else (3, 7)


def supports_files_method_with_python(release: Release) -> bool:
    """Whether Ansible modules can run on the switch: ansible-core 2.19 needs Python >= 3.8 on the target."""
    return python_version(release) >= (3, 8)


def supports_nvue(release: Release) -> bool:
    return release.major >= 5


def supported_methods(release: Release) -> tuple[str, ...]:
    """Methods the role supports on this release: the agentless files method everywhere, NVUE from 5.0."""
    return ("files", "nvue") if supports_nvue(release) else ("files",)


def nvue_api_default_listen(release: Release) -> str:
    """'localhost' on 5.0-5.5 (nginx nvue.conf 'listen localhost:8765'), 'all' from 5.6 (nv set system api)."""
    return "localhost" if release.line <= (5, 5) else "all"


def nvue_password_gate(release: Release) -> bool:
    """From 5.6 the API answers 403 until the default cumulus password has been changed."""
    return release.line >= (5, 6)


def nvue_apply_is_saved(release: Release) -> bool:
    """Up to 5.8 an apply is not saved to /etc/nvue.d/startup.yaml (lost at reboot) until a separate save."""
    return release.line >= (5, 9)


def nvue_reports_oper_status(release: Release) -> bool:
    """link.oper-status in GET /nvue_v1/interface is documented from 5.11."""
    return release.line >= (5, 11)


@dataclass(frozen=True)
class NvueKeys:
    """NVUE key names and on/off values that changed in 5.15 (5.15 'NVUE command changes' tables)."""

    enable_key: str  # mlag enable / qos roce enable (up to 5.14) -> mlag state / qos roce state
    on: str  # "on" -> "enabled"
    ip_key: str  # interface <id> ip address -> ipv4 address

    def enabled(self) -> dict[str, str]:
        return {self.enable_key: self.on}


def nvue_keys(release: Release) -> NvueKeys:
    if release.line >= (5, 15):
        return NvueKeys(enable_key="state", on="enabled", ip_key="ipv4")
    return NvueKeys(enable_key="enable", on="on", ip_key="ip")


def fec_for_forced_speed(speed_gbps: int | None, fec_by_speed: Mapping[Any, Any] | None) -> str | None:
    """The FEC to set with a forced speed, from the inventory's speed -> FEC map (keys as ints or strings); None
    when the map gives none, or a value that is not one of FEC_MODES. The rule "a forced speed needs a valid FEC"
    is this function returning None: the plan of both methods (cumulus_fabric.derive_plan, ports and uplinks),
    nvue_fabric.forced_speed_problems (with the release's breakout lanes) and preflight's rule_forced_speed_fec
    call it."""
    if speed_gbps is None or not fec_by_speed:
        return None
    for key, value in fec_by_speed.items():
        try:
            if int(str(key).rstrip("Gg")) == int(speed_gbps):
                return str(value) if str(value) in FEC_MODES else None
        except ValueError:
            continue
    return None
