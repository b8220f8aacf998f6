"""The simulated QM8700: configuration (running and saved), the command interpreter shared by the JSON API and
the SSH CLI, `show` outputs as JSON (API, `| json-print`) and text (CLI), and the subnet-manager election.

Modelled on the public MLNX-OS documentation and on public code that drives real switches:
- config commands in one line (`interface ib 1/1 speed hdr force`) or in interface mode (`interface ib 1/1`, then
  `speed hdr force`); `configuration write` / `write memory` copies running to saved; a restart boots from saved,
  as a real reload does;
- errors are lines starting with '%' on the CLI (`% Unrecognized command "foo".`) and the same text, without
  the '% ', in the JSON API's status_message;
- a port's module type (split) can only change while its ports are shut down; a QM8700 has ports 1/1..1/40,
  a split port becomes 1/N/1 and 1/N/2 (HDR100: two lanes).

Subnet manager election (a choice the switch cannot make alone, documented here): every simulator of the same
subnet shares one JSON file (default: `ib-subnet.json` next to the state file) where it publishes
{enabled, priority, guid, pid}. `show ib sm` reports the local SM as `master` when it is enabled, alive and has
the highest priority among the live enabled SMs (ties: the lower GUID wins, as in the IBTA election), `standby`
when another one wins, and `disabled` when the SM is off. So a pair configured with two equal priorities still
elects one master, and a standby whose master has stopped becomes master, as OpenSM does.
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

RELEASE = "3.9.0606"
PORT_COUNT = 40
SPEEDS = ["sdr", "ddr", "qdr", "fdr10", "fdr", "edr", "hdr"]
LANE_RATE_4X = {"sdr": 10, "ddr": 20, "qdr": 40, "fdr10": 40, "fdr": 56, "edr": 100, "hdr": 200}
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


@dataclass
class Result:
    text: str = ""
    data: Any = None
    kind: str = "show"  # show | config | session


def factory_config(name: str) -> dict[str, Any]:
    suffix = hashlib.sha256(name.encode()).hexdigest()[:6]
    return {
        "hostname": f"switch-{suffix}",
        "sm": {"enabled": False, "priority": 0},
        "cages": {f"1/{n}": "qsfp" for n in range(1, PORT_COUNT + 1)},
        "ports": {f"1/{n}": {"admin": True, "speeds": list(SPEEDS), "description": ""}
                  for n in range(1, PORT_COUNT + 1)},
        "partitions": {"Default": {"pkey": "0x7fff", "ipoib": True, "mtu": "2K", "defmember": "full"}},
        "ntp": {"enabled": False, "servers": []},
        "logging": {"servers": {}},
    }


def port_sort_key(name: str) -> tuple[int, ...]:
    return tuple(int(x) for x in name.split("/"))


def _ok(value: bool) -> str:
    return "yes" if value else "no"


def _kv_text(rows: list[tuple[str, Any]], indent: str = "") -> str:
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"{indent}{k + ':':<{width + 1}} {v}" for k, v in rows)


class Switch:
    def __init__(self, name: str, state_path: Path, subnet_path: Path | None = None,
                 faults_path: Path | None = None, log_path: Path | None = None):
        self.name = name
        self.state_path = Path(state_path)
        self.subnet_path = Path(subnet_path) if subnet_path else self.state_path.parent / "ib-subnet.json"
        self.faults_path = Path(faults_path) if faults_path else self.state_path.with_suffix(".faults.json")
        self.log_path = Path(log_path) if log_path else self.state_path.with_suffix(".log")
        self.lock = threading.RLock()
        self.started = time.time()
        self.guid = "0x" + hashlib.sha256(("guid:" + name).encode()).hexdigest()[:16]
        self.saved = factory_config(name)
        if self.state_path.exists():
            stored = json.loads(self.state_path.read_text())
            self.saved = stored.get("saved", self.saved)
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
            table[self.name] = {"enabled": self.running["sm"]["enabled"], "priority": self.running["sm"]["priority"],
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

    def sm_state(self) -> str:
        if not self.running["sm"]["enabled"]:
            return "disabled"
        try:
            table = json.loads(self.subnet_path.read_text() or "{}")
        except (FileNotFoundError, ValueError):
            table = {}
        table[self.name] = {"enabled": True, "priority": self.running["sm"]["priority"], "guid": self.guid,
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
        port = self.running["ports"][name]
        cage = "/".join(name.split("/")[:2])
        up, speed, rate = self.port_oper(name)
        lanes = 2 if self.running["cages"][cage] == "qsfp-split-2" else 4
        return {
            "Admin state": "Enabled" if port["admin"] else "Disabled",
            "Operational state": "Up" if up else "Down",
            "Description": port["description"] or "N\\A",
            "Module type": self.running["cages"][cage],
            "Supported speeds": ", ".join(SPEEDS),
            "Configured speeds": ", ".join(port["speeds"]),
            "Actual speed": speed.upper() if speed else "N/A",
            "Width": f"{lanes}X",
            "Current line rate": f"{rate:.1f} Gbps" if rate else "N/A",
            "Logical port state": "Active" if up else ("Disabled" if not port["admin"] else "Down"),
            "Physical port state": "LinkUp" if up else ("Disabled" if not port["admin"] else "Polling"),
            "IB Subnet": "infiniband-default",
            "MTU": "4096 bytes",
        }

    # ------------------------------------------------------------ show commands

    def show(self, words: list[str]) -> Result:
        key = " ".join(words[1:])
        if key == "version":
            uptime = int(time.time() - self.started)
            data = {"Product name": "MLNX-OS", "Product release": RELEASE, "Build ID": "#1-dev",
                    "Build date": "2020-06-23 13:58:27", "Target arch": "x86_64", "Target hw": "x86_64",
                    "Product model": "x86onie", "Chassis model": "MQM8700-HS2F (simulated)",
                    "Host ID": self.guid[2:14].upper(), "System UUID": self.guid,
                    "Uptime": f"0d {uptime // 3600}h {uptime // 60 % 60}m {uptime % 60}s"}
            return Result(_kv_text(list(data.items())), data)
        if key == "hosts":
            data = {"Hostname": self.running["hostname"], "Name servers": "none", "Domain names": "none"}
            return Result(_kv_text(list(data.items())), data)
        if key == "ib sm":
            state = self.sm_state()
            data = {"SM Status": "enable" if self.running["sm"]["enabled"] else "disable",
                    "SM Priority": str(self.running["sm"]["priority"]), "SM State": state, "GUID": self.guid}
            return Result(_kv_text(list(data.items())), data)
        if key in ("interfaces ib", "interfaces ib status") or (len(words) == 4 and words[1:3] == ["interfaces", "ib"]):
            names = self.port_names()
            if len(words) == 4 and words[3] != "status":
                self._port(words[3])
                names = [words[3].upper().removeprefix("IB")]
            details = {f"IB{n}": [self._port_detail(n)] for n in names}
            if key == "interfaces ib status":
                cols = ("Description", "Actual speed", "Current line rate", "Logical port state",
                        "Physical port state")
                data = {k: [{c: v[0][c] for c in cols}] for k, v in details.items()}
                header = f"{'Interface':<12}{'Description':<34}{'Speed':<8}{'Current line rate':<20}" \
                         f"{'Logical port state':<21}Physical port state"
                lines = [header, "-" * len(header)]
                for port_name, row in data.items():
                    r = row[0]
                    lines.append(f"{port_name:<12}{r['Description'][:33]:<34}{r['Actual speed']:<8}"
                                 f"{r['Current line rate']:<20}{r['Logical port state']:<21}{r['Physical port state']}")
                return Result("\n".join(lines), data)
            text = "\n\n".join(f"{k}:\n" + _kv_text(list(v[0].items()), "  ") for k, v in details.items())
            return Result(text, details)
        if key == "ib partition":
            data = {}
            blocks = []
            for pname, part in self.running["partitions"].items():
                row = {"PKey": part["pkey"], "ipoib": _ok(part["ipoib"]), "mtu": part["mtu"],
                       "defmember": part["defmember"]}
                data[pname] = [row]
                blocks.append(f"{pname}:\n" + _kv_text(list(row.items()), "  ") +
                              "\n  members:\n    GUID='ALL' member='" + part["defmember"] + "'")
            return Result("\n".join(blocks), data)
        if key in ("ntp", "ntp configured"):
            ntp = self.running["ntp"]
            data: Any = [{"NTP is administratively": "enabled" if ntp["enabled"] else "disabled",
                          "NTP Authentication administratively": "disabled"}]
            lines = [f"NTP is administratively            : {'enabled' if ntp['enabled'] else 'disabled'}",
                     "NTP Authentication administratively: disabled", ""]
            for server in ntp["servers"]:
                data.append({"header": f"NTP server {server}", "Enabled": "yes", "NTP version": "4",
                             "Key ID": "none", "Trusted": "no"})
                lines += [f"Server {server}:", "  Enabled    : yes", "  NTP version: 4", "  Key ID     : none"]
            return Result("\n".join(lines), data)
        if key == "logging":
            servers = self.running["logging"]["servers"]
            remote = [{"header": ip, "Port": "514", "Trap level": v["trap"]} for ip, v in servers.items()]
            data = {"Local logging level": "notice", "Remote syslog servers": remote or "none"}
            lines = ["Local logging level: notice", "Remote syslog servers:"]
            lines += [f"  {r['header']} (port {r['Port']}) trap level: {r['Trap level']}" for r in remote] or ["  none"]
            return Result("\n".join(lines), data)
        if key in ("running-config", "configuration running"):
            lines = self.running_config()
            return Result("\n".join(lines), {"Lines": lines})
        if key == "configuration":
            unsaved = self.running != self.saved
            data = {"Unsaved changes": _ok(unsaved)}
            return Result(_kv_text(list(data.items())), data)
        raise CommandError(f'Unrecognized command "{words[1] if len(words) > 1 else ""}".\nType "show ?" for help.'
                           if len(words) > 1 else "Incomplete command.")

    def running_config(self) -> list[str]:
        cfg = self.running
        lines = ["##", '## Running database "initial"', f"## Generated at {time.strftime('%Y/%m/%d %H:%M:%S')}",
                 f"## Hostname: {cfg['hostname']}", f"## Product release: {RELEASE}", "##", "",
                 "##", "## Interface IB configuration", "##"]
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
        lines += ["", "##", "## Network interface configuration", "##", f"   hostname {cfg['hostname']}", "",
                  "##", "## Subnet Manager configuration", "##"]
        if cfg["sm"]["priority"]:
            lines.append(f"   ib sm priority {cfg['sm']['priority']}")
        if cfg["sm"]["enabled"]:
            lines.append("   ib sm")
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

    def _sm(self, words: list[str], negate: bool) -> None:
        sm = self.running["sm"]
        if not words:
            sm["enabled"] = not negate
            return
        if words[0] == "priority":
            if negate:
                sm["priority"] = 0
                return
            if len(words) != 2 or not words[1].isdigit() or not 0 <= int(words[1]) <= 15:
                raise CommandError(f'Invalid value "{words[1] if len(words) > 1 else ""}": priority must be in '
                                   "range 0-15")
            sm["priority"] = int(words[1])
            return
        raise CommandError(f'Unrecognized keyword "{words[0]}".')

    def _smnode(self, words: list[str], negate: bool) -> None:
        if len(words) < 2:
            raise CommandError("Incomplete command.")
        if words[0] != self.running["hostname"]:
            raise CommandError(f'Unknown SM node "{words[0]}"')
        if words[1] == "enable":
            self.running["sm"]["enabled"] = not negate
        elif words[1] == "disable":
            self.running["sm"]["enabled"] = negate
        elif words[1] == "sm-priority" and len(words) == 3:
            self._sm(["priority", words[2]], negate)
        else:
            raise CommandError(f'Unrecognized keyword "{words[1]}".')

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
