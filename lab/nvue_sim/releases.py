"""Release profiles of the NVUE simulator: what differs between the Cumulus Linux releases it models.

Each field names the release behaviour it models and where that comes from (CumulusNetworks/docs,
``content/cumulus-linux-<NN>/``; copies of the API answers are in tests/fixtures/cumulus/real/ with SOURCES).
The role's own per-release rules live in module_utils/cumulus_release.py; the simulator does not import them, so
a wrong rule there shows up as a failing test here instead of being mirrored.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Profile:
    release: str  # what GET /nvue_v1/system answers in "build": "Cumulus Linux <release>"
    # NVUE's breakout values. Up to 5.3: 1x, 2x50G, 4x25G, 4x10G ... (speed in the value); 5.4 "uses a new format for
    # port splitting ... 1=1x or 1=4x" and NVUE dropped the speed forms "with no backwards compatibility"
    # (5.4 Switch Port Attributes, Configure a Breakout Port).
    breakout_pattern: str
    # 5.15 renamed on/off flags: "nv set mlag enable on|off" -> "nv set mlag state enabled|disabled", "qos roce enable"
    # -> "qos roce state", "interface <id> ip address" -> "ipv4 address" (5.15 NVUE command changes tables).
    enable_key: str
    on: str
    off: str
    ip_key: str
    # Up to 5.8 an applied revision is not saved: "To save an applied configuration change to the startup
    # configuration file (/etc/nvue.d/startup.yaml) ... use a PATCH to the applied revision with the save state"; from
    # 5.9 apply saves as well.
    auto_save: bool
    # 5.0-5.5: nginx's nvue.conf has "listen localhost:8765 ssl;" (5.1 NVUE API page); from 5.6 "nv set system api
    # listening-address", all addresses by default (5.9 NVUE API page).
    listens_on_localhost_only: bool
    # From 5.6: "To use the NVUE REST API in Cumulus Linux 5.6 and later, you must change the password for the cumulus
    # user; otherwise you see 403 responses" (5.9 NVUE API page).
    password_gate: bool
    # Revision ids: "changeset/cumulus/2021-11-02_16.09.18_5Z1K" in the 5.1 guide, "4" in the 5.4 guide, "1" in 5.9.
    numeric_revisions: bool
    # link.oper-status in the operational interface view is documented from 5.11; earlier profiles report the
    # operational state only as link.state ({"up": {}} / {"down": {}}).
    oper_status: bool


PROFILES: dict[str, Profile] = {
    "5.3": Profile("5.3.1", r"^(1x|[248]x[0-9]+G|disabled|loopback)$", "enable", "on", "off", "ip",
                   auto_save=False, listens_on_localhost_only=True, password_gate=False, numeric_revisions=False,
                   oper_status=False),
    "5.4": Profile("5.4.0", r"^([1248]x|disabled|loopback)$", "enable", "on", "off", "ip",
                   auto_save=False, listens_on_localhost_only=True, password_gate=False, numeric_revisions=True,
                   oper_status=False),
    "5.9": Profile("5.9.2", r"^([1248]x|disabled|loopback)$", "enable", "on", "off", "ip",
                   auto_save=True, listens_on_localhost_only=False, password_gate=True, numeric_revisions=True,
                   oper_status=False),
    "5.15": Profile("5.15.0", r"^([1248]x|disabled|loopback)$", "state", "enabled", "disabled", "ipv4",
                    auto_save=True, listens_on_localhost_only=False, password_gate=True, numeric_revisions=True,
                    oper_status=True),
}
DEFAULT = "5.9"
