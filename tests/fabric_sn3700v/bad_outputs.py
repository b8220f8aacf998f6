"""Bad answers of an SN3700V: the Cumulus NVUE REST API (an HTML page, no body, JSON cut or doubled, a key twice,
a list where an object belongs, an RFC 7807 problem document with HTTP 200, a revision of another id or without
a state, an operational view with wrong types) and, for the files method, the shell commands' JSON (clagctl -j,
bridge -j vlan show, ip -d -j link show cut, doubled or of the wrong shape; /etc/lsb-release cut). Each replaces
one answer of a switch that is otherwise converged, and goes through what the modules run:
module_utils/nvue_client.py's NvueClient with the body decoding library/nvue_fabric.py's fetcher uses (then
release_from_nvue_system, differences against the applied configuration, the revision apply loop,
operational_mismatches), and module_utils/cumulus_switch.live_mismatches / cumulus_release.files_breakouts for the
files method. Every one must end in an error with a reason, or in mismatches that fail the task; none may read
as "in sync", apply a change, or crash.

    .venv/bin/python -m tests.fabric_sn3700v.bad_outputs     one line per case, then "N bad outputs, N rejected ..."

Real answers (tests/fixtures/cumulus/real/SOURCES): GET /nvue_v1/system, POST /revision, PATCH apply, GET
/revision of an applied, an invalid and an ays_fail revision (NVIDIA's guides), clagctl -j of a 4.2.1 pair
(SuzieQ), bridge -j vlan show (ifupdown2's switch tests), /etc/lsb-release. Constructed, because no capture is
public (SOURCES says so): the applied configuration (the role's own desired tree), the operational GET
/nvue_v1/interface and /nvue_v1/mlag (the shape tests/fabric_sn3700v/test_live.py uses), ip -d -j link show and
ip -j addr show dev lo. The problem document's shape {"detail", "status", "title", "type"} is the OpenAPI
validator's, as lab/nvue_sim models it; the guides show no 4xx body.
"""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]  # run as `python -m tests.<area>.bad_outputs` from there

from tests.device_text import Outcome, cut, judge_call, print_corpus, run_corpus, use_project_modules  # noqa: E402

use_project_modules()

from ansible.module_utils.cumulus_fabric import derive_plan  # noqa: E402
from ansible.module_utils.cumulus_release import ReleaseError, files_breakouts, release_from_nvue_system  # noqa: E402
from ansible.module_utils.cumulus_switch import Raw, SwitchError, live_mismatches  # noqa: E402
from ansible.module_utils.nvue_client import NvueClient, NvueError, decode_body  # noqa: E402
from ansible.module_utils.nvue_fabric import desired, differences, normalise_vlans, operational_mismatches  # noqa: E402

from tests.fabric_sn3700v.inventory_data import settings_for  # noqa: E402

REAL = ROOT / "tests/fixtures/cumulus/real"
HTML_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
            "</center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n")


def real(name: str) -> str:
    return (REAL / name).read_text()


def problem(status: int, title: str, detail: str) -> str:
    return json.dumps({"detail": detail, "status": status, "title": title, "type": "about:blank"})


# ------------------------------------------------------------------------------- the converged NVUE switch

PLAN = derive_plan("sn3700v01", settings_for("production", "sn3700v01"))[0].as_dict()
SYSTEM = real("nvue-5.9-get-system.json")
RELEASE = release_from_nvue_system(json.loads(SYSTEM))
WANT = desired(PLAN, RELEASE)
INTERFACES = {
    **{p["name"]: {"link": {"mtu": p["mtu"], "state": {"up": {}}},
                   "bridge": {"domain": {PLAN["bridge"]: {"access": p["access_vlan"]}}}} for p in PLAN["ports"]},
    **{u["name"]: {"link": {"mtu": u["mtu"], "state": {"up": {}}}, "bridge": {"domain": {PLAN["bridge"]: {}}}}
       for u in PLAN.get("uplinks", [])},
    PLAN["peerlink"]["bond"]: {"link": {"mtu": PLAN["peerlink"]["mtu"], "state": {"up": {}}},
                               "bond": {"member": {m: {} for m in PLAN["peerlink"]["members"]}}},
}
MLAG = {"peer-alive": True, "local-role": PLAN["peerlink"]["role"], "backup-active": True}
APPLIED = "/?rev=applied&filled=false"
NVUE_HEALTHY: dict[tuple[str, str], tuple[int, str]] = {
    ("GET", "/system"): (200, SYSTEM),
    ("GET", APPLIED): (200, json.dumps(WANT, indent=2)),
    ("POST", "/revision"): (200, real("nvue-5.9-post-revision.json")),
    ("PATCH", "/revision/1"): (200, real("nvue-5.9-revision-apply.json")),
    ("GET", "/revision/1"): (200, real("nvue-5.9-revision-applied.json")),
    ("GET", "/interface"): (200, json.dumps(INTERFACES, indent=2)),
    ("GET", "/mlag"): (200, json.dumps(MLAG, indent=2)),
}


def canned_client(answers: dict[tuple[str, str], tuple[int, str]]) -> NvueClient:
    """The real client; its fetch answers from the table and decodes bodies as library/nvue_fabric.py's does."""
    def fetch(method: str, url: str, body: Any) -> tuple[int, Any]:
        parts = urlsplit(url)
        key = parts.path.removeprefix("/nvue_v1") + (f"?{parts.query}" if parts.query else "")
        status, raw = answers[(method, key)]
        return status, decode_body(raw)
    return NvueClient("https://192.0.2.31:8765", fetch)


# The module's steps, each as library/nvue_fabric.py runs it; (rejected, what came of it).
def step_system(client: NvueClient) -> tuple[bool, str]:
    return False, f"release {release_from_nvue_system(client.get('/system') or {})}"


def step_applied(client: NvueClient) -> tuple[bool, str]:
    changes = differences(WANT, normalise_vlans(client.get("/", rev="applied", filled=False) or {}))
    return False, f"{len(changes)} change(s) to apply: {changes[:2]}" if changes else "in sync"


def step_apply(client: NvueClient) -> tuple[bool, str]:
    revision = client.create_revision()
    state = client.apply(revision, timeout=0, poll=0, sleep=lambda _s: None, confirm=True)
    return False, f"revision {revision} {state}"


def step_operational(client: NvueClient) -> tuple[bool, str]:
    mismatches = operational_mismatches(PLAN, client.get("/interface") or {}, client.get("/mlag"))
    return (True, "; ".join(mismatches)) if mismatches else (False, "operational state matches")


# ------------------------------------------------------------------------- the files method (clagctl, iproute2)

CLAG = real("clag-json-4.2.1-leaf01-suzieq.json")
BRIDGE_VLAN = real("bridge-vlan-show-j-ifupdown2-bridge1.json")
FILES_PLAN = derive_plan("leaf01", {
    "method": "files", "nics_by_host": {}, "port_mtu": 9216, "vlans": [{"id": 13, "name": "v13"}],
    "bridge": {"name": "bridge", "vlan_aware": True, "pvid": 13}, "clag_role": "primary", "clag_priority": 100,
    "clag_backup_ip": "10.0.0.12", "clag": {"enabled": True, "sys_mac": "44:39:39:ff:40:94",
                                            "peerlink": {"bond": "peerlink", "members": ["swp49"], "vlan": 4094}},
})[0].as_dict()
LINKS = json.dumps([
    {"ifname": "bridge", "mtu": 9216, "operstate": "UP",
     "linkinfo": {"info_kind": "bridge", "info_data": {"vlan_filtering": 1}}},
    {"ifname": "peerlink", "mtu": 9216, "operstate": "UP", "master": "bridge",
     "flags": ["BROADCAST", "MULTICAST", "MASTER", "UP", "LOWER_UP"],
     "linkinfo": {"info_kind": "bond", "info_slave_kind": "bridge"}},
    {"ifname": "swp49", "mtu": 9216, "operstate": "UP", "master": "peerlink",
     "flags": ["BROADCAST", "MULTICAST", "SLAVE", "UP", "LOWER_UP"], "linkinfo": {"info_slave_kind": "bond"}},
])
FILES_HEALTHY: dict[str, tuple[int, str]] = {
    "ip -d -j link show": (0, LINKS),
    "bridge -j vlan show": (0, BRIDGE_VLAN),
    "ip -j addr show dev lo": (0, '[{"ifname":"lo","addr_info":[{"local":"127.0.0.1","prefixlen":8}]}]'),
    "command -v clagctl >/dev/null 2>&1": (0, ""),
    "clagctl -j": (0, CLAG),
}


def step_files(answers: dict[str, tuple[int, str]]) -> tuple[bool, str]:
    def run(command: str) -> Raw:
        rc, out = answers[command]
        return Raw(command, rc, out if rc == 0 else "", "" if rc == 0 else out)
    mismatches = live_mismatches(run, FILES_PLAN, require_link_up=True)
    return (True, "; ".join(mismatches)) if mismatches else (False, "live state matches")


def step_lsb(text: str) -> tuple[bool, str]:
    return False, f"release {files_breakouts(text, {}, '')['release']}"


# ------------------------------------------------------------------------------------------------- cases


@dataclass(frozen=True)
class Bad:
    tool: str
    what: str
    step: str                                     # system | applied | apply | operational | files | lsb
    nvue: dict[tuple[str, str], tuple[int, str]] = field(default_factory=dict)
    files: dict[str, tuple[int, str]] = field(default_factory=dict)
    lsb: str = ""


def _json(value: Any) -> str:
    return json.dumps(value, indent=2)


def _interfaces(edit: Callable[[dict[str, Any]], None]) -> dict[tuple[str, str], tuple[int, str]]:
    view = copy.deepcopy(INTERFACES)
    edit(view)
    return {("GET", "/interface"): (200, _json(view))}


def _port(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda view: view.__setitem__(name, value)


FIRST = PLAN["ports"][0]["name"]
APPLIED_TEXT = _json(WANT)

CASES: list[Bad] = [
    Bad("GET /system", "nginx's 502 page with HTTP 502", "system", {("GET", "/system"): (502, HTML_502)}),
    Bad("GET /system", "nginx's 502 page with HTTP 200", "system", {("GET", "/system"): (200, HTML_502)}),
    Bad("GET /system", "empty body with HTTP 200", "system", {("GET", "/system"): (200, "")}),
    Bad("GET /system", "the real answer cut before the build", "system",
        {("GET", "/system"): (200, cut(SYSTEM, "Cumulus Linux"))}),
    Bad("GET /system", "the real /system and /system/api answers concatenated", "system",
        {("GET", "/system"): (200, SYSTEM + real("nvue-5.9-get-system-api.json"))}),
    Bad("GET /system", "a build without a release number", "system",
        {("GET", "/system"): (200, SYSTEM.replace("Cumulus Linux 5.4.0", "Cumulus Linux"))}),
    Bad("GET /system", "a 403 problem document (default password) with HTTP 200", "system",
        {("GET", "/system"): (200, problem(403, "Forbidden", "Password change required"))}),
    Bad("GET applied", "an HTML page with HTTP 200", "applied", {("GET", APPLIED): (200, HTML_502)}),
    Bad("GET applied", "empty body with HTTP 200", "applied", {("GET", APPLIED): (200, "")}),
    Bad("GET applied", "a JSON list instead of the configuration", "applied",
        {("GET", APPLIED): (200, _json([WANT]))}),
    Bad("GET applied", "a 404 problem document with HTTP 200", "applied",
        {("GET", APPLIED): (200, problem(404, "Not Found", "The requested URL was not found on the server."))}),
    Bad("GET applied", "the key 'interface' twice, the second empty", "applied",
        {("GET", APPLIED): (200, APPLIED_TEXT[: APPLIED_TEXT.rindex("}")] + ', "interface": {}}')}),
    Bad("GET applied", "the configuration cut mid-JSON", "applied",
        {("GET", APPLIED): (200, cut(APPLIED_TEXT, '"mtu"'))}),
    Bad("POST /revision", "an empty object instead of the new revision", "apply",
        {("POST", "/revision"): (200, "{}")}),
    Bad("POST /revision", "two revisions in one answer (5.1's and 5.9's merged)", "apply",
        {("POST", "/revision"): (200, _json({**json.loads(real("nvue-5.1-post-revision.json")),
                                             **json.loads(real("nvue-5.9-post-revision.json"))}))}),
    Bad("PATCH apply", "a 400 problem document with HTTP 200", "apply",
        {("PATCH", "/revision/1"): (200, problem(400, "Bad Request", "'appply' is not one of ['apply', 'save']"))}),
    Bad("GET /revision", "the real invalid revision (config_invalid issue)", "apply",
        {("GET", "/revision/1"): (200, real("nvue-5.1-revision-invalid.json"))}),
    Bad("GET /revision", "the real ays_fail revision", "apply",
        {("GET", "/revision/1"): (200, real("nvue-5.1-revision-ays-fail-nested.json")
                                  .replace("changeset/cumulus/2021-11-02_16.09.18_5Z1K", "1"))}),
    Bad("GET /revision", "an applied revision nested under another revision id", "apply",
        {("GET", "/revision/1"): (200, _json({"2": json.loads(real("nvue-5.9-revision-applied.json"))}))}),
    Bad("GET /revision", "a state NVUE does not have", "apply",
        {("GET", "/revision/1"): (200, _json({"state": "bogus", "transition": {"issue": {}, "progress": ""}}))}),
    Bad("GET /revision", "no state at all", "apply",
        {("GET", "/revision/1"): (200, _json({"transition": {"issue": {}, "progress": ""}}))}),
    Bad("GET /interface", "a fabric port as the string 'up'", "operational", _interfaces(_port(FIRST, "up"))),
    Bad("GET /interface", "an MTU as a string", "operational",
        _interfaces(lambda v: v[FIRST]["link"].__setitem__("mtu", "9216"))),
    Bad("GET /interface", "a fabric port missing (answer cut short)", "operational",
        _interfaces(lambda v: v.pop(FIRST))),
    Bad("GET /interface", "a link with neither oper-status nor state", "operational",
        _interfaces(lambda v: v[FIRST]["link"].pop("state"))),
    Bad("GET /mlag", "peer-alive the string 'true'", "operational",
        {("GET", "/mlag"): (200, _json({**MLAG, "peer-alive": "true"}))}),
    Bad("GET /mlag", "a JSON list", "operational", {("GET", "/mlag"): (200, _json([MLAG]))}),
    Bad("clagctl -j", "the real status cut mid-JSON", "files",
        files={"clagctl -j": (0, cut(CLAG, '"peerAlive"'))}),
    Bad("clagctl -j", "the real status printed twice", "files", files={"clagctl -j": (0, CLAG + CLAG)}),
    Bad("clagctl -j", "a list instead of an object", "files", files={"clagctl -j": (0, f"[{CLAG}]")}),
    Bad("clagctl -j", "peerAlive the string 'true'", "files",
        files={"clagctl -j": (0, CLAG.replace('"peerAlive": true', '"peerAlive": "true"'))}),
    Bad("bridge -j vlan show", "the real output cut mid-JSON", "files",
        files={"bridge -j vlan show": (0, cut(BRIDGE_VLAN, '"swp_BB_"'))}),
    Bad("bridge -j vlan show", "a port's vlans as a string", "files",
        files={"bridge -j vlan show": (0, '[{"ifname": "swp_AA_", "vlans": "1-20"}]')}),
    Bad("ip -d -j link show", "an object instead of the list of links", "files",
        files={"ip -d -j link show": (0, json.dumps({"links": json.loads(LINKS)}))}),
    Bad("ip -d -j link show", "failed: netlink refused (exit 1)", "files",
        files={"ip -d -j link show": (1, "Cannot open netlink socket: Permission denied")}),
    Bad("/etc/lsb-release", "the real file cut after DISTRIB_ID", "lsb",
        lsb=cut(real("lsb-release-4.2.0.txt"), "DISTRIB_RELEASE")),
    Bad("/etc/lsb-release", "an empty file", "lsb", lsb=""),
]


def outcome_of(case: Bad) -> tuple[bool, str]:
    if case.step == "files":
        return step_files({**FILES_HEALTHY, **case.files})
    if case.step == "lsb":
        return step_lsb(case.lsb)
    steps = {"system": step_system, "applied": step_applied, "apply": step_apply, "operational": step_operational}
    return steps[case.step](canned_client({**NVUE_HEALTHY, **case.nvue}))


def judge(case: Bad) -> Outcome:
    return judge_call(case, lambda: outcome_of(case), (NvueError, ReleaseError, SwitchError))


def healthy_passes() -> bool:
    """Every step on the converged switch: the release read, in sync, a revision applied, no mismatch."""
    try:
        client = canned_client(NVUE_HEALTHY)
        return (step_applied(client) == (False, "in sync") and not step_operational(client)[0]
                and step_apply(client) == (False, "revision 1 applied") and step_system(client)[1] == "release 5.4.0"
                and not step_files(FILES_HEALTHY)[0] and step_lsb(real("lsb-release-4.2.0.txt"))[1] == "release 4.2.0")
    except (NvueError, ReleaseError, SwitchError):
        return False


def run_all() -> list[Outcome]:
    return run_corpus(CASES, judge, healthy_passes)


if __name__ == "__main__":
    sys.exit(print_corpus(run_all(), "the converged switch does not read as converged: the corpus proves nothing"))
