"""The bridge's forwarding table (``bridge fdb show``, iproute2; what Cumulus Linux prints on every release) read
into Links: the MAC addresses the switch learned on each port. Evidence for an end that sends no LLDP (a PowerScale
front-end port): the check names the host by matching a learned MAC with the host's interface MACs.

Only MACs learned on a port (``<mac> dev <port> [vlan N] master <bridge>``) count: the switch's own addresses
(``permanent``), CLAG-synced ones (``sticky``, ``static``), EVPN/VXLAN ones (``extern_learn``, ``self`` entries with
``dst``) and those on the bridge, bond-internal or vxlan devices are not a cable. Real capture:
tests/fixtures/lldp/real/cumulus-4.2.1-leaf02-bridge-fdb-show.txt (SOURCES). The remote end of a link is the MAC
(node and port) until the check resolves it.
"""

from __future__ import annotations

import re

from .model import CablingError, End, Link

LINE = re.compile(r"^([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}) dev (\S+)(.*)$")
NOT_A_CABLE = ("permanent", "static", "sticky", "extern_learn", "self")
NOT_A_PORT = re.compile(r"^(bridge|br_|vni|vxlan|vlan|peerlink|lo$)")


def parse(text: str, local: str, source: str = "") -> list[Link]:
    where = source or "bridge fdb show output"
    if not text.strip():
        raise CablingError(f"{where}: empty: no bridge fdb output")
    links: list[Link] = []
    seen: set[tuple[str, str]] = set()
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        match = LINE.match(raw.strip())
        if not match:
            raise CablingError(f"{where}: line {number}: not bridge fdb show output: {raw.strip()[:100]}")
        mac, dev, rest = match.group(1).lower(), match.group(2), match.group(3).split()
        if "master" not in rest or any(flag in rest for flag in NOT_A_CABLE) or NOT_A_PORT.match(dev):
            continue
        if (dev, mac) in seen:
            continue
        seen.add((dev, mac))
        vlan = rest[rest.index("vlan") + 1] if "vlan" in rest[:-1] else ""
        info = {"mac": mac, **({"vlan": vlan} if vlan else {})}
        links.append(Link(End(local, dev), End(mac, mac), "fdb", source, remote_info=info))
    return links
