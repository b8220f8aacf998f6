"""ifupdown2 interfaces files: parse stanzas, merge the role's managed region, and check the result.

The role owns a delimited region of /etc/network/interfaces (BEGIN/END markers) holding the stanzas of the
interfaces the inventory owns. Everything else in the file (the management interface eth0/mgmt, other
stanzas, ``source`` lines, comments) is kept verbatim. A stanza for an owned interface found outside the
region (the Debian/Cumulus default ``iface lo inet loopback``, say) is adopted: it moves into the region and
the options the role does not set are carried over, so no setting is silently dropped.

Pure functions, no I/O: the cumulus_interfaces module does the reading, validation and writing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

BEGIN_MARK = "# BEGIN sn3700v storage fabric (managed by Ansible role sn3700v: edits here are overwritten)"
END_MARK = "# END sn3700v storage fabric"
STANZA_KEYWORDS = ("iface", "auto", "mapping", "source", "source-directory")
# Options that may appear more than once in a stanza: carried over value by value.
MULTI_VALUE_OPTIONS = {"address", "address-purge", "up", "down", "pre-up", "post-up", "pre-down", "post-down"}


@dataclass
class Stanza:
    """An ``iface`` stanza: its header line and option lines (raw text, indentation kept)."""

    name: str
    header: str
    options: list[tuple[str, str]] = field(default_factory=list)  # (key, value)
    raw: list[str] = field(default_factory=list)

    def option(self, key: str) -> list[str]:
        return [v for k, v in self.options if k == key]


@dataclass
class Parsed:
    """A file split into items: ('text', line), ('auto', line, names), ('iface', Stanza).

    ``in_region[i]`` tells whether item i lies between the role's BEGIN/END markers (the markers themselves are
    not items); ``region_at`` is the item index where the region started, None when the file has none.
    """

    items: list[tuple] = field(default_factory=list)
    in_region: list[bool] = field(default_factory=list)
    region_at: int | None = None

    def stanzas(self) -> list[Stanza]:
        return [item[1] for item in self.items if item[0] == "iface"]

    def add(self, item: tuple, region: bool) -> None:
        self.items.append(item)
        self.in_region.append(region)


def _is_keyword_line(line: str) -> bool:
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return False
    word = stripped.split()[0]
    return word in STANZA_KEYWORDS or word.startswith("allow-")


def parse(text: str) -> Parsed:
    """Split an interfaces file into items, keeping every line of foreign content verbatim."""
    parsed = Parsed()
    lines = text.splitlines()
    region = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped == BEGIN_MARK:
            region = True
            if parsed.region_at is None:
                parsed.region_at = len(parsed.items)
            i += 1
            continue
        if stripped == END_MARK:
            region = False
            i += 1
            continue
        words = stripped.split()
        if words and (words[0] == "auto" or words[0].startswith("allow-")):
            parsed.add(("auto", line, words[1:]), region)
            i += 1
            continue
        if words and words[0] == "iface" and len(words) >= 2:
            stanza = Stanza(name=words[1], header=line, raw=[line])
            i += 1
            while i < len(lines) and not _is_keyword_line(lines[i]) and lines[i].strip() not in (BEGIN_MARK, END_MARK):
                option_line = lines[i]
                option = option_line.strip()
                # A blank line or an unindented comment ends the stanza visually; keep it as text.
                if not option or (option.startswith("#") and not option_line[:1].isspace()):
                    break
                stanza.raw.append(option_line)
                if not option.startswith("#"):
                    key, _unused, value = option.partition(" ")
                    stanza.options.append((key, value.strip()))
                i += 1
            parsed.add(("iface", stanza), region)
            continue
        parsed.add(("text", line), region)
        i += 1
    return parsed


def sourced_patterns(text: str) -> list[str]:
    """The glob patterns a file includes with ``source`` (``source-directory`` as DIR/*)."""
    patterns = []
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 2 and words[0] == "source":
            patterns.append(words[1])
        elif len(words) >= 2 and words[0] == "source-directory":
            patterns.append(words[1].rstrip("/") + "/*")
    return patterns


@dataclass
class MergeResult:
    text: str
    adopted: list[str]
    carried: dict[str, list[str]]


def merge(existing: str, managed: str, owned: list[str]) -> MergeResult:
    """The new interfaces file: foreign content kept, the managed region replaced by ``managed``.

    ``managed`` holds the role's stanzas (auto + iface lines); ``owned`` the interfaces it owns.
    """
    parsed = parse(existing)
    managed_parsed = parse(managed)
    ours = {s.name: s for s in managed_parsed.stanzas()}
    owned_set = set(owned) | set(ours)
    adopted: list[str] = []
    carried: dict[str, list[str]] = {}
    kept: list[str] = []
    region_index = None
    for index, item in enumerate(parsed.items):
        if parsed.region_at == index:
            region_index = len(kept)
        if parsed.in_region[index]:
            continue  # the previous region: replaced as a whole
        kind = item[0]
        if kind == "iface" and item[1].name in owned_set:
            stanza: Stanza = item[1]
            adopted.append(stanza.name)
            mine = ours.get(stanza.name)
            if mine is not None:
                my_keys = {k for k, _unused in mine.options}
                extra = [
                    f"{k} {v}".strip()
                    for k, v in stanza.options
                    if k not in my_keys or (k in MULTI_VALUE_OPTIONS and (k, v) not in mine.options)
                ]
                if extra:
                    carried[stanza.name] = extra
            continue
        if kind == "auto":
            names = [n for n in item[2] if n not in owned_set]
            if len(names) != len(item[2]):
                if names:
                    kept.append(item[1].split()[0] + " " + " ".join(names))
                continue
            kept.append(item[1])
            continue
        if kind == "iface":
            kept.extend(item[1].raw)
            continue
        kept.append(item[1])
    if region_index is None and parsed.region_at is not None:
        region_index = len(kept)
    region = [BEGIN_MARK, *_with_carried(managed, carried), END_MARK]
    if region_index is None:
        while kept and not kept[-1].strip():
            kept.pop()
        out = [*kept, "", *region]
    else:
        out = [*kept[:region_index], *region, *kept[region_index:]]
    text = "\n".join(_squeeze_blank(out)).strip("\n") + "\n"
    return MergeResult(text=text, adopted=sorted(set(adopted)), carried=carried)


def _with_carried(managed: str, carried: dict[str, list[str]]) -> list[str]:
    """The managed stanzas, with the options carried over from adopted foreign stanzas appended."""
    out: list[str] = []
    pending: list[str] = []
    for line in managed.strip("\n").splitlines():
        if pending and (not line.strip() or _is_keyword_line(line)):
            out.extend(pending)
            pending = []
        words = line.split()
        if words and words[0] == "iface" and len(words) > 1:
            pending = [f"    {opt}" for opt in carried.get(words[1], [])]
        out.append(line)
    out.extend(pending)
    return out


def _squeeze_blank(lines: list[str]) -> list[str]:
    out: list[str] = []
    for line in lines:
        if not line.strip() and out and not out[-1].strip():
            continue
        out.append(line.rstrip())
    return out


def foreign_definitions(text: str, owned: list[str]) -> list[str]:
    """Owned interfaces that an included file (interfaces.d) defines: the role must not fight over them."""
    owned_set = set(owned)
    return sorted({s.name for s in parse(text).stanzas() if s.name in owned_set})


# ifupdown2 options the role's templates may emit. ifupdown2's own syntax check (ifup -s) accepts an unknown
# option name silently, so a template typo is caught here instead.
KNOWN_OPTIONS = {
    "address", "alias", "mtu", "link-speed", "link-duplex", "link-autoneg", "link-fec", "link-type",
    "bridge-access", "bridge-vids", "bridge-pvid", "bridge-ports", "bridge-vlan-aware",
    "bond-slaves", "bond-mode", "bond-lacp-rate", "bond-min-links", "bond-lacp-bypass-allow", "clag-id",
    "clagd-peer-ip", "clagd-backup-ip", "clagd-sys-mac", "clagd-priority", "clagd-args",
}


def unknown_options(text: str) -> list[str]:
    """Options in ``text`` (the role's own stanzas) that ifupdown2 does not know: template bugs."""
    return [f"iface {s.name}: unknown option {key}" for s in parse(text).stanzas()
            for key, _unused in s.options if key not in KNOWN_OPTIONS]


# --- a Python check of a rendered file, for tests and as a first gate before ifupdown2's own check ---

_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,15}$")


def check(text: str, mtu_min: int = 552, mtu_max: int = 9216) -> list[str]:
    """Structural problems in an interfaces file (empty list when it looks sound).

    Not a replacement for ``ifup -s``: it checks what a template bug would break (unique stanzas, names,
    MTU range, bridge ports and bond slaves that exist, access VLANs the bridge carries, options with values).
    """
    problems: list[str] = []
    parsed = parse(text)
    stanzas = parsed.stanzas()
    seen: dict[str, int] = {}
    for stanza in stanzas:
        seen[stanza.name] = seen.get(stanza.name, 0) + 1
    for name, count in seen.items():
        if count > 1:
            problems.append(f"iface {name} is defined {count} times")
    names = set(seen)
    bridge_vids: dict[str, set[int]] = {}
    bridge_of: dict[str, str] = {}
    slaves: set[str] = set()
    for stanza in stanzas:
        if not _NAME_RE.match(stanza.name):
            problems.append(f"iface {stanza.name}: not a valid Linux interface name")
        for key, value in stanza.options:
            if not value and key not in ("bridge-vlan-aware",):
                problems.append(f"iface {stanza.name}: option {key} has no value")
        for value in stanza.option("mtu"):
            if not value.isdigit() or not mtu_min <= int(value) <= mtu_max:
                problems.append(f"iface {stanza.name}: mtu {value} is outside {mtu_min}..{mtu_max}")
        if stanza.option("bridge-ports"):
            vids: set[int] = set()
            for value in stanza.option("bridge-vids"):
                vids |= _vid_set(value, problems, stanza.name)
            bridge_vids[stanza.name] = vids
            for port in " ".join(stanza.option("bridge-ports")).split():
                if port == "none":
                    continue
                bridge_of[port] = stanza.name
                if port not in names:
                    problems.append(f"iface {stanza.name}: bridge port {port} has no iface stanza")
        for value in stanza.option("bond-slaves"):
            for slave in value.split():
                slaves.add(slave)
                if slave not in names:
                    problems.append(f"iface {stanza.name}: bond slave {slave} has no iface stanza")
    for stanza in stanzas:
        for value in stanza.option("bridge-access"):
            bridge = bridge_of.get(stanza.name)
            if bridge is None:
                problems.append(f"iface {stanza.name}: bridge-access {value} but it is no bridge's port")
            elif not value.isdigit() or int(value) not in bridge_vids.get(bridge, set()):
                problems.append(f"iface {stanza.name}: access VLAN {value} is not in {bridge}'s bridge-vids")
        if stanza.name in slaves and stanza.name in bridge_of:
            problems.append(f"iface {stanza.name}: is both a bond slave and a bridge port")
    return problems


def _vid_set(value: str, problems: list[str], name: str) -> set[int]:
    vids: set[int] = set()
    for token in value.split():
        low, _unused, high = token.partition("-")
        if not low.isdigit() or (high and not high.isdigit()):
            problems.append(f"iface {name}: bridge-vids token {token} is not a VLAN or range")
            continue
        start, end = int(low), int(high or low)
        if not 1 <= start <= end <= 4094:
            problems.append(f"iface {name}: bridge-vids {token} is outside 1..4094")
            continue
        vids |= set(range(start, end + 1))
    return vids
