"""The simulated QM8700: configuration (running and saved), the command interpreter shared by the JSON API and
the SSH CLI, `show` outputs as JSON (API, `| json-print`) and text (CLI), and the subnet-manager election.

Modelled on the real-output corpus tests/fixtures/mlnxos (real captures, and formats known from the MLNX-OS
manual in constructed/, with the reasoning), on the manual and on public code that drives real switches:
- config commands in one line (`interface ib 1/1 speed hdr force`) or in interface mode (`interface ib 1/1`, then
  `speed hdr force`); `configuration write` / `write memory` copies running to saved; a restart boots from saved,
  as a real reload does;
- errors are lines starting with '%' on the CLI (`% Unrecognized command "foo".`) and the same text, without
  the '% ', in the JSON API's status_message;
- a port's module type (split) can only change with the split-ready system profile and while its ports are shut
  down; a QM8700 has ports 1/1..1/40, a split port becomes 1/N/1 and 1/N/2 (HDR100: two lanes);
- what a real switch refuses is refused (`ib sm priority`, ddr/fdr10, `no interface ib ...`).

Subnet manager election (a choice the switch cannot make alone, documented here): every simulator of the same
subnet shares one JSON file (default: `ib-subnet.json` next to the state file) where it publishes
{enabled, priority, guid, pid}. `show ib smnode HOST ha-role` reports the local SM as `master` when it is
enabled, alive and has the highest priority among the live enabled SMs (ties: the lower GUID wins, as in the IBTA
election), `standby` when another one wins, and `none` when the SM is off (`sm-running`: `not running`). So a pair
configured with two equal priorities still elects one master, and a standby whose master has stopped becomes
master, as OpenSM does.
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import re
import shlex
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PORT_COUNT = 40
# A QM8700 port's `Supported speeds`: DDR and FDR10 are not among them (the switch refuses them).
SPEEDS = ["sdr", "qdr", "fdr", "edr", "hdr"]
LANE_RATE_4X = {"sdr": 10, "qdr": 40, "fdr": 56, "edr": 100, "hdr": 200}
FACTORY_PROFILE = "ib"
SPLIT_READY_PROFILE = "ib split-ready"


@dataclass(frozen=True)
class ReleaseProfile:
    """What differs between the MLNX-OS releases this simulator models. No difference in the commands and
    outputs it covers is documented between 3.9.x and 3.10.x (tests/fixtures/mlnxos/SOURCES); the profiles
    differ in the release they report, and the tests run against each."""

    release: str
    build_date: str


RELEASES = {
    "3.9": ReleaseProfile("3.9.0606", "2020-06-23 13:58:27"),
    "3.10": ReleaseProfile("3.10.4300", "2022-11-27 10:21:33"),
}
MODULE_TYPES = ("qsfp", "qsfp-split-2")
IB_MTUS = ("256", "512", "1K", "2K", "4K")
HOSTNAME_RE = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$")


class CommandError(Exception):
    """A command the switch refuses; the text is what MLNX-OS prints after '% '."""


@dataclass
class Session:
    transport: str  # "json" | "cli"
    user: str
    mode: str = "user"  # user | enable | config
    interface: str | None = None  # set in interface configuration mode
    pending: Any = None  # a command waiting for the answer to "Type 'yes' to continue" (CLI)


@dataclass
class Result:
    text: str = ""
    data: Any = None
    kind: str = "show"  # show | config | session


def factory_config(name: str, profile: str = FACTORY_PROFILE) -> dict[str, Any]:
    suffix = hashlib.sha256(name.encode()).hexdigest()[:6]
    return {
        "hostname": f"switch-{suffix}",
        "system_profile": profile,
        "json_gw": True,
        "sm": {"enabled": False},
        "smnodes": {},
        "cages": {f"1/{n}": "qsfp" for n in range(1, PORT_COUNT + 1)},
        "ports": {f"1/{n}": {"admin": True, "speeds": list(SPEEDS), "description": ""}
                  for n in range(1, PORT_COUNT + 1)},
        "partitions": {"Default": {"pkey": "0x7fff", "ipoib": True, "mtu": "2K", "defmember": "full"}},
        "ntp": {"enabled": False, "servers": []},
        "logging": {"servers": {}},
    }


def migrate_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """State files written by the earlier simulator (SM priority in sm.priority, DDR/FDR10 among the speeds, no
    system profile): the same switch in this model. Idempotent."""
    cfg = copy.deepcopy(cfg)
    cfg.setdefault("system_profile", FACTORY_PROFILE)
    cfg.setdefault("json_gw", True)
    smnodes = cfg.setdefault("smnodes", {})
    priority = cfg.get("sm", {}).pop("priority", None)
    if priority:
        smnodes.setdefault(cfg["hostname"], {"priority": int(priority)})
    for port in cfg.get("ports", {}).values():
        port["speeds"] = [s for s in port.get("speeds", SPEEDS) if s in SPEEDS] or list(SPEEDS)
    return cfg


def port_sort_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name.split("/"))


def _ok(value: bool) -> str:
    return "yes" if value else "no"


def _kv_text(rows: list[tuple[str, Any]], indent: str = "") -> str:
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"{indent}{k + ':':<{width + 1}} {v}" for k, v in rows)


class Switch:
    def __init__(self, name: str, state_path: Path, subnet_path: Path | None = None,
                 faults_path: Path | None = None, log_path: Path | None = None, release: str = "3.9",
                 profile: str = FACTORY_PROFILE):
        self.name = name
        self.release = RELEASES[release]
        self.state_path = Path(state_path)
        self.subnet_path = Path(subnet_path) if subnet_path else self.state_path.parent / "ib-subnet.json"
        self.faults_path = Path(faults_path) if faults_path else self.state_path.with_suffix(".faults.json")
        self.log_path = Path(log_path) if log_path else self.state_path.with_suffix(".log")
        self.lock = threading.RLock()
        self.started = time.time()
        self.guid = "0x" + hashlib.sha256(("guid:" + name).encode()).hexdigest()[:16]
        self.saved = factory_config(name, profile)
        if self.state_path.exists():
            stored = json.loads(self.state_path.read_text())
            self.saved = migrate_config(stored.get("saved", self.saved))
        # A (re)start boots the saved configuration, as a reload of a real switch does.
        self.running = copy.deepcopy(self.saved)
        self._persist()
        self._publish_sm()

    # ------------------------------------------------------------ persistence, faults, log

    def _persist(self) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"name": self.name, "saved": self.saved, "running": self.running}, indent=1))
        os.replace(tmp, self.state_path)

    def faults(self) -> dict[str, Any]:
        """Test hooks, re-read on every command: {"links": {"1/1": "hdr"}, "command_errors": {regex: text},
        "json_api_http_status": 503}. `links` is the cabling: a port with a peer comes up at the best speed both
        ends enable."""
        try:
            return json.loads(self.faults_path.read_text())
        except FileNotFoundError:
            return {}

    def log(self, session: Session, command: str, result: Result | None, error: str | None) -> None:
        entry = {"time": round(time.time(), 3), "transport": session.transport, "user": session.user,
                 "mode": session.mode, "command": command, "kind": result.kind if result else "error",
                 "status": "ERROR" if error else "OK"}
        if error:
            entry["message"] = error
        with self.log_path.open("a") as handle:
            handle.write(json.dumps(entry) + "\n")

    # ------------------------------------------------------------ subnet manager election

    def _publish_sm(self) -> None:
        """Update this switch's entry in the shared subnet file: read-modify-write under a lock file, and an
        atomic replace, so that readers (the other simulators' `show ib sm`) always see a whole file."""
        self.subnet_path.parent.mkdir(parents=True, exist_ok=True)
        lock_path = self.subnet_path.with_name(self.subnet_path.name + ".lock")
        with lock_path.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                table = json.loads(self.subnet_path.read_text() or "{}")
            except (FileNotFoundError, ValueError):
                table = {}
            table[self.name] = {"enabled": self.running["sm"]["enabled"], "priority": self.sm_priority(),
                                "guid": self.guid, "pid": os.getpid(), "hostname": self.running["hostname"]}
            tmp = self.subnet_path.with_name(f".{self.subnet_path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
            os.replace(tmp, self.subnet_path)

    @staticmethod
    def _alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def sm_priority(self, node: str | None = None) -> int:
        """The priority of an SM node (this switch's node is named after its current hostname; default 0)."""
        return int(self.running["smnodes"].get(node or self.running["hostname"], {}).get("priority", 0))

    def sm_state(self) -> str:
        if not self.running["sm"]["enabled"]:
            return "disabled"
        try:
            table = json.loads(self.subnet_path.read_text() or "{}")
        except (FileNotFoundError, ValueError):
            table = {}
        table[self.name] = {"enabled": True, "priority": self.sm_priority(), "guid": self.guid,
                            "pid": os.getpid()}
        contenders = [(entry["priority"], -int(entry["guid"], 16), name) for name, entry in table.items()
                      if entry.get("enabled") and self._alive(int(entry.get("pid", 0)))]
        winner = max(contenders)[2]
        return "master" if winner == self.name else "standby"

    # ------------------------------------------------------------ ports

    def port_names(self) -> list[str]:
        return sorted(self.running["ports"], key=port_sort_key)

    def _port(self, name: str) -> dict[str, Any]:
        name = name.upper().removeprefix("IB")
        if name not in self.running["ports"]:
            cage = "/".join(name.split("/")[:2])
            if cage in self.running["cages"] and self.running["cages"][cage] != "qsfp":
                raise CommandError(f"Interface ib {name} is split into {cage}/1 and {cage}/2; configure those")
            raise CommandError(f"Interface ib {name} does not exist")
        return self.running["ports"][name]

    def port_oper(self, name: str) -> tuple[bool, str | None, float | None]:
        port = self.running["ports"][name]
        cage = "/".join(name.split("/")[:2])
        peer = self.faults().get("links", {}).get(cage)
        if not port["admin"] or not peer or peer not in SPEEDS:
            return False, None, None
        common = [s for s in port["speeds"] if SPEEDS.index(s) <= SPEEDS.index(peer)]
        if not common:
            return False, None, None
        speed = max(common, key=SPEEDS.index)
        lanes = 2 if self.running["cages"][cage] == "qsfp-split-2" else 4
        return True, speed, LANE_RATE_4X[speed] * lanes / 4

    def _port_detail(self, name: str) -> dict[str, Any]:
        """An IB port block of `show interfaces ib` (labels and order:
        tests/fixtures/mlnxos/constructed/qm8700-declared/show-interfaces-ib.json). Admin state and configured
        speeds are not in it: they are in the running config."""
        port = self.running["ports"][name]
        cage = "/".join(name.split("/")[:2])
        up, speed, rate = self.port_oper(name)
        lanes = 2 if self.running["cages"][cage] == "qsfp-split-2" else 4
        return {
            "Logical port state": "Active" if up else "Down",
            "Physical port state": "LinkUp" if up else ("Disabled" if not port["admin"] else "Polling"),
            "Current line rate": f"{rate:.1f} Gbps" if rate else "N/A",
            "Supported speeds": ", ".join(SPEEDS),
            "Speed": speed.upper() if speed else "N/A",
            "Supported widths": "1X, 2X" if lanes == 2 else "1X, 2X, 4X",
            "Width": f"{lanes}X" if up else "N/A",
            "MTU": "4096 bytes",
            "Description": port["description"] or "N\\A",
        }

    # ------------------------------------------------------------ show commands

    @staticmethod
    def _one_line(text: str) -> Result:
        """A one-line output: the CLI prints the line, the JSON API answers {"value": [LINE]}."""
        return Result(text, {"value": [text]})

    def _smnode_show(self, node: str, what: str) -> Result:
        nodes = self.running["smnodes"]
        if node != self.running["hostname"] and node not in nodes:
            raise CommandError(f'Unknown SM node "{node}"')
        local = node == self.running["hostname"]
        running = local and self.running["sm"]["enabled"]
        role = self.sm_state() if running else "none"
        if what == "sm-priority":
            return self._one_line(str(self.sm_priority(node)))
        if what == "sm-running":
            return self._one_line("running" if running else "not running")
        if what == "ha-role":
            return self._one_line(role)
        if what == "ha-state":
            return self._one_line({"master": "active", "standby": "standby"}.get(role, "none"))
        raise CommandError(f'Unrecognized command "{what}".\nType "show ib smnode {node} ?" for help.')

    def show(self, words: list[str]) -> Result:
        key = " ".join(words[1:])
        if key == "version":
            # Keys and CLI layout of tests/fixtures/mlnxos/real/onyx/show-version.{json,txt}.
            uptime = int(time.time() - self.started)
            rel, date = self.release.release, self.release.build_date
            groups = [
                [("Product name", "MLNX-OS"), ("Product release", rel), ("Build ID", "#1-dev"),
                 ("Build date", date), ("Target arch", "x86_64"), ("Target hw", "x86_64"),
                 ("Built by", "jenkins@mlnxos-sim"), ("Version summary", f"X86_64 {rel} {date} x86_64")],
                [("Product model", "x86onie"), ("Host ID", self.guid[2:14].upper()),
                 ("System serial num", "MT0000X00000"), ("System UUID", self.guid[2:])],
                [("Uptime", f"0d {uptime // 3600}h {uptime // 60 % 60}m {uptime % 60}.000s"),
                 ("CPU load averages", "0.06 / 0.12 / 0.13"), ("Number of CPUs", "4"),
                 ("System memory", "2597 MB used / 5213 MB free / 7810 MB total"),
                 ("Swap", "0 MB used / 0 MB free / 0 MB total")]]
            width = max(len(k) for group in groups for k, _ in group) + 1
            text = "\n\n".join("\n".join(f"{k + ':':<{width}} {v}" for k, v in group) for group in groups)
            return Result(text, {k: v for group in groups for k, v in group})
        if key == "ib sm":
            return self._one_line("enable" if self.running["sm"]["enabled"] else "disable")
        if len(words) == 5 and words[1:3] == ["ib", "smnode"]:
            return self._smnode_show(words[3], words[4])
        if key == "system profile":
            return self._one_line(self.running["system_profile"])
        if key == "interfaces ib" or (len(words) == 4 and words[1:3] == ["interfaces", "ib"]):
            names = self.port_names()
            if len(words) == 4:
                self._port(words[3])
                names = [words[3].upper().removeprefix("IB")]
            rows = [{"header": f"IB{n}", **self._port_detail(n)} for n in names]
            text = "\n\n".join(f"{r['header']}:\n" + _kv_text([(k, v) for k, v in r.items() if k != "header"], "  ")
                               for r in rows)
            return Result(text, rows)
        if key == "ib partition":
            partitions: dict[str, list[dict[str, Any]]] = {}
            blocks = []
            for pname, part in self.running["partitions"].items():
                row = {"PKey": part["pkey"], "ipoib": _ok(part["ipoib"]), "mtu": part["mtu"],
                       "defmember": part["defmember"]}
                partitions[pname] = [row]
                blocks.append(f"{pname}:\n" + _kv_text(list(row.items()), "  ") +
                              "\n  members:\n    GUID='ALL' member='" + part["defmember"] + "'")
            return Result("\n".join(blocks), partitions)
        if key in ("ntp", "ntp configured"):
            # The shape of tests/fixtures/mlnxos/real/onyx/show-ntp-configured*.json.
            ntp = self.running["ntp"]
            head: dict[str, Any] = {"NTP enabled": _ok(ntp["enabled"]), "NTP Authentication enabled": "no"}
            if not ntp["servers"]:
                head.update({"message 1": "No NTP peers configured.", "message 2": "No NTP servers configured."})
            ntp_data = [head] + [{"NTP version": "4", "Enabled": "yes", "Trusted": "no", "Key ID": "none",
                                  "header": f"NTP server {server}"} for server in ntp["servers"]]
            lines = [f"NTP enabled: {head['NTP enabled']}", "NTP Authentication enabled: no", ""]
            for server in ntp["servers"]:
                lines += [f"NTP server {server}:", "  Enabled    : yes", "  NTP version: 4", "  Trusted    : no",
                          "  Key ID     : none"]
            if not ntp["servers"]:
                lines += ["No NTP peers configured.", "No NTP servers configured."]
            return Result("\n".join(lines), ntp_data)
        if key == "logging":
            # The shape of tests/fixtures/mlnxos/real/onyx/show-logging.json; how a configured server is listed is
            # not in any public capture (tests/fixtures/mlnxos/constructed/README.md). The role reads servers from the running config.
            servers = self.running["logging"]["servers"]
            remote: list[dict[str, Any]] = ([{"header": ip, "Trap level": v["trap"]} for ip, v in servers.items()]
                                            or [{"Lines": ["No remote syslog servers configured"]}])
            log_data: list[dict[str, Any]] = [
                {"Log format": "standard",
                 "Log rotation size threshold": "10.000% of partition (986.46 megabytes)",
                 "Allow receiving of messages from remote hosts": "no",
                 "Override for class debug-module": "notice", "Local logging level": "notice",
                 "Number of archived log files to keep": "10", "Default remote logging level": "notice",
                 "Subsecond timestamp field": "disabled", "Log rotation frequency": "weekly",
                 "debug": []},
                {"Levels at which messages are logged": [{"CLI commands": "notice", "Audit messages": "notice"}]},
                {"Remote syslog servers": remote}]
            lines = ["Local logging level: notice", "Remote syslog servers:"]
            lines += [f"  {ip} trap level: {v['trap']}" for ip, v in servers.items()] or \
                ["  No remote syslog servers configured"]
            return Result("\n".join(lines), log_data)
        if key in ("running-config", "configuration running"):
            lines = self.running_config()
            # JSON API / json-print: {"Lines": [...]} as in tests/fixtures/mlnxos/real/onyx/running-config-include.json
            return Result("\n".join(lines), {"Lines": lines})
        raise CommandError(f'Unrecognized command "{words[1] if len(words) > 1 else ""}".\nType "show ?" for help.'
                           if len(words) > 1 else "Incomplete command.")

    def running_config(self) -> list[str]:
        """Comment lines start with '##', settings are indented by three spaces (real/onyx captures)."""
        cfg = self.running
        lines = ["##", '## Running database "initial"', f"## Generated at {time.strftime('%Y/%m/%d %H:%M:%S')}",
                 f"## Hostname: {cfg['hostname']}", f"## Product release: {self.release.release}", "##", "",
                 "##", "## Running-config temporary prefix mode setting", "##", "no cli default prefix-modes enable",
                 "", "##", "## Interface IB configuration", "##"]
        for cage, module_type in sorted(cfg["cages"].items(), key=lambda kv: port_sort_key(kv[0])):
            if module_type != "qsfp":
                lines.append(f"   interface ib {cage} module-type {module_type} force")
        for name in self.port_names():
            port = cfg["ports"][name]
            if port["speeds"] != SPEEDS:
                lines.append(f"   interface ib {name} speed {' '.join(port['speeds'])} force")
            if port["description"]:
                lines.append(f'   interface ib {name} description "{port["description"]}"')
            if not port["admin"]:
                lines.append(f"   interface ib {name} shutdown")
        lines += ["", "##", "## Other IP configuration", "##", f"   hostname {cfg['hostname']}", "",
                  "##", "## Subnet Manager configuration", "##"]
        if cfg["sm"]["enabled"]:
            lines.append("   ib sm")
        for node, values in sorted(cfg["smnodes"].items()):
            lines.append(f"   ib smnode {node} sm-priority {values['priority']}")
        lines += ["", "##", "## Partitions configuration", "##"]
        for pname, part in cfg["partitions"].items():
            lines.append(f"   ib partition {pname} pkey {part['pkey']} force")
            if part["ipoib"]:
                lines.append(f"   ib partition {pname} ipoib force")
            lines.append(f"   ib partition {pname} mtu {part['mtu']} force")
        lines += ["", "##", "## Network management configuration", "##"]
        lines += [f"   ntp server {s}" for s in cfg["ntp"]["servers"]]
        if cfg["ntp"]["enabled"]:
            lines.append("   ntp enable")
        for ip, v in cfg["logging"]["servers"].items():
            lines.append(f"   logging {ip}")
            if v["trap"] != "notice":
                lines.append(f"   logging {ip} trap {v['trap']}")
        if not cfg["json_gw"]:
            lines += ["", "##", "## Web configuration", "##", "   no json-gw enable"]
        return lines

    # ------------------------------------------------------------ configuration commands

    def _interface(self, port: str, words: list[str], negate: bool) -> None:
        if not words:
            raise CommandError("Incomplete command.")
        verb, args = words[0], words[1:]
        force = "force" in args
        args = [a for a in args if a != "force"]
        if verb == "module-type":
            cage = "/".join(port.upper().removeprefix("IB").split("/")[:2])
            if cage not in self.running["cages"]:
                raise CommandError(f"Interface ib {port} does not exist")
            if len(args) != 1 or args[0] not in MODULE_TYPES:
                raise CommandError(f'Unrecognized keyword "{args[0] if args else ""}".' if args
                                   else "Incomplete command.")
            wanted = args[0]
            current = self.running["cages"][cage]
            if "split-ready" not in self.running["system_profile"].split():
                raise CommandError("Port split is not supported by the current system profile; configure "
                                   "'system profile ib split-ready' first")
            if wanted == current:
                return
            members = [n for n in self.port_names() if n == cage or n.startswith(cage + "/")]
            if any(self.running["ports"][n]["admin"] for n in members):
                raise CommandError(f"Port {cage} must be administratively disabled (shutdown) before its "
                                   "module-type can be changed")
            if not force:
                raise CommandError("Changing the module-type resets the port configuration; add 'force' to proceed")
            for n in members:
                del self.running["ports"][n]
            new = [cage] if wanted == "qsfp" else [f"{cage}/1", f"{cage}/2"]
            for n in new:
                self.running["ports"][n] = {"admin": False, "speeds": list(SPEEDS), "description": ""}
            self.running["cages"][cage] = wanted
            return
        target = self._port(port)
        if verb == "shutdown":
            target["admin"] = negate
        elif verb == "speed":
            if negate:
                target["speeds"] = list(SPEEDS)
                return
            speeds = [a.lower() for a in args]
            if not speeds:
                raise CommandError("Incomplete command.")
            for speed in speeds:
                if speed not in SPEEDS:
                    raise CommandError(f'Unrecognized keyword "{speed}".')
            if not force and target["admin"] and self.port_oper(port.upper().removeprefix("IB"))[0]:
                raise CommandError("Changing the speed of an active port takes the link down; add 'force'")
            target["speeds"] = sorted(set(speeds), key=SPEEDS.index)
        elif verb == "description":
            if negate:
                target["description"] = ""
                return
            text = " ".join(args)
            if not text:
                raise CommandError("Incomplete command.")
            if len(text) > 64:
                raise CommandError("Description is limited to 64 characters")
            target["description"] = text
        else:
            raise CommandError(f'Unrecognized keyword "{verb}".')

    def _partition(self, words: list[str], negate: bool) -> None:
        if not words:
            raise CommandError("Incomplete command.")
        name, rest = words[0], [w for w in words[1:] if w != "force"]
        parts = self.running["partitions"]
        if not re.fullmatch(r"[A-Za-z0-9_]{1,64}", name):
            raise CommandError(f'Invalid partition name "{name}"')
        if not rest:
            if negate:
                if name not in parts:
                    raise CommandError(f"Partition {name} does not exist")
                del parts[name]
                return
            raise CommandError("Incomplete command.")
        verb = rest[0]
        if verb == "pkey":
            if negate or len(rest) != 2:
                raise CommandError("Incomplete command." if len(rest) < 2 else f'Unrecognized keyword "{rest[2]}".')
            try:
                value = int(rest[1], 16)
            except ValueError:
                raise CommandError(f'Invalid pkey "{rest[1]}": expected a hexadecimal number') from None
            if not 0x1 <= value <= 0x7FFF:
                raise CommandError(f"Invalid pkey {rest[1]}: must be in range 0x0001-0x7fff")
            if name == "Default" and value != 0x7FFF:
                raise CommandError("The Default partition pkey is 0x7fff and cannot be changed")
            if name != "Default" and value == 0x7FFF:
                raise CommandError("pkey 0x7fff is reserved for the Default partition")
            for other, part in parts.items():
                if other != name and int(part["pkey"], 16) == value:
                    raise CommandError(f"pkey {rest[1]} is already used by partition {other}")
            if name in parts and int(parts[name]["pkey"], 16) != value:
                raise CommandError(f"Partition {name} already has pkey {parts[name]['pkey']}; remove it first")
            parts.setdefault(name, {"pkey": f"0x{value:04x}", "ipoib": False, "mtu": "2K", "defmember": "full"})
            return
        if name not in parts:
            raise CommandError(f"Partition {name} does not exist; create it with a pkey first")
        if verb == "ipoib":
            parts[name]["ipoib"] = not negate
        elif verb == "mtu":
            if len(rest) != 2 or rest[1].upper() not in IB_MTUS:
                raise CommandError(f'Invalid MTU "{rest[1] if len(rest) > 1 else ""}": use one of '
                                   + ", ".join(IB_MTUS))
            parts[name]["mtu"] = "2K" if negate else rest[1].upper()
        elif verb == "defmember":
            if len(rest) != 2 or rest[1] not in ("full", "limited"):
                raise CommandError("Incomplete command.")
            parts[name]["defmember"] = rest[1]
        else:
            raise CommandError(f'Unrecognized keyword "{verb}".')

    @staticmethod
    def _priority(words: list[str], negate: bool) -> int:
        if negate:
            return 0
        if len(words) != 1 or not words[0].isdigit() or not 0 <= int(words[0]) <= 15:
            raise CommandError(f'Invalid value "{words[0] if words else ""}": priority must be in range 0-15'
                               if words else "Incomplete command.")
        return int(words[0])

    def _sm(self, words: list[str], negate: bool) -> None:
        """`ib sm`, `ib sm sm-priority N` (stored as `ib smnode HOST sm-priority N`). There is no
        `ib sm priority`: the switch answers Unrecognized command."""
        if not words:
            self.running["sm"]["enabled"] = not negate
            return
        if words[0] == "sm-priority":
            node = self.running["hostname"]
            self.running["smnodes"].setdefault(node, {})["priority"] = self._priority(words[1:], negate)
            return
        raise CommandError(f'Unrecognized command "{words[0]}".\nType "ib sm ?" for help.')

    def _smnode(self, words: list[str], negate: bool) -> None:
        if len(words) < 2:
            raise CommandError("Incomplete command.")
        node = words[0]
        if words[1] == "sm-priority":
            self.running["smnodes"].setdefault(node, {})["priority"] = self._priority(words[2:], negate)
        elif words[1] in ("enable", "disable") and node == self.running["hostname"]:
            self.running["sm"]["enabled"] = (words[1] == "enable") != negate
        else:
            raise CommandError(f'Unrecognized command "{words[1]}".\nType "ib smnode {node} ?" for help.')

    def configure(self, session: Session, words: list[str]) -> str:
        """Apply one configuration command; returns the result kind ('session' when it only entered
        interface configuration mode)."""
        negate = words[0] == "no"
        if negate:
            words = words[1:]
            if not words:
                raise CommandError("Incomplete command.")
        head = words[0]
        if head == "hostname":
            if negate or len(words) != 2:
                raise CommandError("Incomplete command.")
            if not HOSTNAME_RE.fullmatch(words[1]):
                raise CommandError(f'Invalid hostname "{words[1]}"')
            self.running["hostname"] = words[1]
        elif head == "interface" and negate:
            raise CommandError('Unrecognized command "interface".\nType "no ?" for help.')
        elif words[:2] == ["system", "profile"]:
            # Real: the switch reboots and comes back in the initial configuration wizard (factory settings).
            if negate or len(words) < 3:
                raise CommandError("Incomplete command.")
            profile = " ".join(words[2:])
            if profile not in (FACTORY_PROFILE, SPLIT_READY_PROFILE):
                raise CommandError(f'Unrecognized command "{words[-1]}".\nType "system profile ?" for help.')
            self.running = factory_config(self.name, profile)
            self.saved = copy.deepcopy(self.running)
        elif words == ["json-gw", "enable"]:
            self.running["json_gw"] = not negate
        elif head == "interface" and len(words) >= 2 and words[1] == "ib":
            if len(words) < 3:
                raise CommandError("Incomplete command.")
            if len(words) == 3 and not negate:
                self._port(words[2])
                session.interface = words[2].upper().removeprefix("IB")
                return "session"
            self._interface(words[2], words[3:], negate)
        elif head == "ib" and len(words) >= 2 and words[1] == "sm":
            self._sm(words[2:], negate)
        elif head == "ib" and len(words) >= 2 and words[1] == "smnode":
            self._smnode(words[2:], negate)
        elif head == "ib" and len(words) >= 2 and words[1] == "partition":
            self._partition(words[2:], negate)
        elif head == "ntp" and len(words) >= 2:
            ntp = self.running["ntp"]
            if words[1] == "enable" and len(words) == 2:
                ntp["enabled"] = not negate
            elif words[1] == "server" and len(words) == 3:
                server = words[2]
                if not re.fullmatch(r"[0-9A-Fa-f:.]+|[A-Za-z0-9.-]+", server):
                    raise CommandError(f'Invalid server "{server}"')
                if negate:
                    if server not in ntp["servers"]:
                        raise CommandError(f"NTP server {server} is not configured")
                    ntp["servers"].remove(server)
                elif server not in ntp["servers"]:
                    ntp["servers"].append(server)
            else:
                raise CommandError(f'Unrecognized keyword "{words[1]}".')
        elif head == "logging" and len(words) >= 2:
            servers = self.running["logging"]["servers"]
            host = words[1]
            if not re.fullmatch(r"[0-9A-Fa-f:.]+|[A-Za-z0-9.-]+", host):
                raise CommandError(f'Unrecognized keyword "{host}".')
            if negate:
                if host not in servers:
                    raise CommandError(f"Remote syslog server {host} is not configured")
                del servers[host]
            elif len(words) == 2:
                servers.setdefault(host, {"trap": "notice"})
            elif len(words) == 4 and words[2] == "trap":
                servers.setdefault(host, {"trap": "notice"})["trap"] = words[3]
            else:
                raise CommandError(f'Unrecognized keyword "{words[2]}".')
        else:
            raise CommandError(f'Unrecognized command "{head}".\nType "?" for help.')
        return "config"

    # ------------------------------------------------------------ the interpreter

    def execute(self, session: Session, line: str) -> Result:
        """Run one command line in the session's mode. Raises CommandError with the switch's text."""
        line = line.strip()
        if session.pending is not None:
            pending, session.pending = session.pending, None
            if line.lower() != "yes":
                raise CommandError("Command aborted")
            with self.lock:
                result = Result(kind=self.configure(session, pending))
                self._persist()
                self._publish_sm()
                return result
        pipe_json = False
        if line.endswith("| json-print"):
            line, pipe_json = line[: -len("| json-print")].strip(), True
        if not line:
            return Result(kind="session")
        try:
            words = shlex.split(line)
        except ValueError:
            raise CommandError("Unmatched quote in command") from None
        with self.lock:
            for pattern, message in self.faults().get("command_errors", {}).items():
                if re.fullmatch(pattern, line):
                    raise CommandError(message)
            result = self._dispatch(session, words)
            if pipe_json:
                result = Result(json.dumps(result.data, indent=4), result.data, result.kind)
            if result.kind == "config":
                self._persist()
                self._publish_sm()
            return result

    def _dispatch(self, session: Session, words: list[str]) -> Result:
        head = words[0]
        if head == "show":
            return self.show(words)
        if head in ("exit", "quit", "end"):
            if session.interface and head == "exit":
                session.interface = None
            elif session.mode == "config":
                session.mode, session.interface = "enable", None
            return Result(kind="session")
        if head == "enable" and len(words) == 1:
            session.mode = "enable" if session.mode == "user" else session.mode
            return Result(kind="session")
        if head == "disable" and len(words) == 1:
            session.mode = "user"
            return Result(kind="session")
        if words[:2] in (["configure", "terminal"], ["config", "terminal"], ["conf", "t"]):
            if session.mode == "user":
                raise CommandError('Unrecognized command "configure".\nType "?" for help.')
            session.mode = "config"
            return Result(kind="session")
        if words in (["no", "cli", "session", "paging", "enable"], ["cli", "session", "paging", "enable"]) or \
                (head == "terminal" and len(words) == 3 and words[1] == "length"):
            return Result(kind="session")
        if session.mode != "config":
            raise CommandError(f'Unrecognized command "{head}".\nType "?" for help.')
        if words in (["configuration", "write"], ["write", "memory"]):
            self.saved = copy.deepcopy(self.running)
            self._persist()
            return Result(kind="config")
        if session.transport == "cli" and len(words) == 4 and words[:3] == ["no", "ib", "partition"]:
            # Removing a partition asks first on the CLI (the `force` forms do not).
            if words[3] not in self.running["partitions"]:
                raise CommandError(f"Partition {words[3]} does not exist")
            session.pending = words
            return Result(f"Partition {words[3]} will be deleted. Type 'yes' to continue: ", kind="confirm")
        if session.interface:
            negate = head == "no"
            rest = words[1:] if negate else words
            if rest and rest[0] in ("speed", "description", "shutdown", "module-type"):
                self._interface(session.interface, rest, negate)
                return Result(kind="config")
        return Result(kind=self.configure(session, words))

    def prompt(self, session: Session) -> str:
        base = f"{self.running['hostname']} [standalone: master]"
        if session.mode == "config":
            if session.interface:
                return f"{base} (config interface ib {session.interface}) # "
            return f"{base} (config) # "
        return f"{base} {'#' if session.mode == 'enable' else '>'} "
