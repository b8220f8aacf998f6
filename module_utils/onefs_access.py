# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""What the storage stage needs from the API user (OneFS RBAC privileges) and the cluster (licences).

One home for the rule: roles/powerscale/README.md lists the same role, privilege by privilege, and
tests/powerscale/test_access.py checks that the two agree. Pure functions over the answers of
``GET /platform/1/auth/id`` (the caller's access token, isilon-sdk ``AuthIdNtoken``: ``privilege`` items with
``id`` and ``permission`` 'r'/'x'/'w'/'-' on OneFS 9.x, or ``read_only`` on earlier releases) and
``GET /platform/5/license/licenses`` (isilon-sdk ``LicenseLicenses``: ``name``, ``status`` one of Unlicensed,
Licensed, Expired, Evaluation, Evaluation Expired).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SMARTCONNECT_ADVANCED = "SmartConnect Advanced"
ACTIVE_LICENCE_STATUSES = ("Licensed", "Evaluation")


@dataclass(frozen=True)
class Need:
    """A privilege (read-only or read-write) and the feature of the run that needs it."""

    privilege: str
    write: bool
    why: str


@dataclass(frozen=True)
class Plan:
    """What this run does on the cluster (from the inventory)."""

    exports: bool = True
    quotas: bool = True
    directories: bool = True
    directory_owners: bool = True   # an owner or group is set on a directory
    pool: bool = False              # the SmartConnect pool is managed
    pool_dynamic: bool = False      # ... with alloc_method dynamic


# The RBAC role, in the order the README lists it. Reads come first: the run reads before it changes anything.
def needs(plan: Plan) -> list[Need]:
    out = [
        Need("ISI_PRIV_LOGIN_PAPI", False, "log in to the Platform API"),
        Need("ISI_PRIV_LICENSE", False, "read the licences (SmartConnect Advanced) before any change"),
        Need("ISI_PRIV_AUTH", False, "read the access zones (powerscale_access_zone and its base path)"),
        Need("ISI_PRIV_NETWORK", plan.pool, "read subnets and node interfaces" +
             ("; create and update the SmartConnect pool (powerscale_smartconnect)" if plan.pool else "")),
        Need("ISI_PRIV_NFS", plan.exports, "read" + (" and create/update" if plan.exports else "") +
             " the NFS exports (powerscale_exports)"),
        Need("ISI_PRIV_QUOTA", plan.quotas, "read" + (" and create/update" if plan.quotas else "") +
             " the directory quotas (powerscale_quotas)"),
    ]
    if plan.directories:
        out += [Need("ISI_PRIV_NS_IFS_ACCESS", False, "create the export directories through the namespace API (RAN)"),
                Need("ISI_PRIV_NS_TRAVERSE", False, "walk to the export directories through the namespace API")]
    if plan.directory_owners:
        out.append(Need("ISI_PRIV_IFS_RESTORE", False, "give the export directories their owner and group (a "
                                                       "directory created through the namespace API belongs to the "
                                                       "API user; only root or this privilege may give it away)"))
    return out


def licence_needs(plan: Plan, other_pools: list[str]) -> list[tuple[str, str]]:
    """(licence, why) the run needs; ``other_pools``: the pools of the subnet other than the managed one."""
    out = []
    if plan.pool and plan.pool_dynamic:
        out.append((SMARTCONNECT_ADVANCED, "alloc_method dynamic on the SmartConnect pool "
                                           "(powerscale_smartconnect.alloc_method)"))
    if plan.pool and other_pools:
        out.append((SMARTCONNECT_ADVANCED, f"a second pool in the subnet (it already holds {', '.join(other_pools)})"))
    return out


def held_privileges(auth_id: dict[str, Any]) -> dict[str, str]:
    """Privilege id -> 'r' or 'w' from a /auth/id answer (9.x ``permission``; earlier ``read_only``)."""
    token = auth_id.get("ntoken") if isinstance(auth_id, dict) else None
    out: dict[str, str] = {}
    for item in (token or {}).get("privilege") or []:
        if not isinstance(item, dict) or not item.get("id"):
            continue
        if "permission" in item:
            perm = {"w": "w", "r": "r", "x": "r"}.get(str(item["permission"]))
        else:
            perm = "r" if item.get("read_only") else "w"
        if perm and out.get(item["id"]) != "w":
            out[str(item["id"])] = perm
    return out


def token_user(auth_id: dict[str, Any]) -> str:
    uid = ((auth_id or {}).get("ntoken") or {}).get("uid") or {}
    return str(uid.get("name") or uid.get("id") or "?")


def active_licences(answer: dict[str, Any]) -> dict[str, str]:
    """Licence name -> status."""
    return {str(item.get("name")): str(item.get("status")) for item in (answer or {}).get("licenses") or []
            if isinstance(item, dict) and item.get("name")}


def missing_privileges(plan: Plan, held: dict[str, str]) -> list[str]:
    """One sentence per privilege the API user lacks (or holds read-only where the run writes)."""
    out = []
    for need in needs(plan):
        have = held.get(need.privilege)
        if have == "w" or (have == "r" and not need.write):
            continue
        kind = "read-write" if need.write else "read-only or read-write"
        state = "holds it read-only" if have else "lacks it"
        out.append(f"{need.privilege} ({kind}) to {need.why}: the API user {state}")
    return out


def missing_licences(plan: Plan, other_pools: list[str], licences: dict[str, str]) -> list[str]:
    out = []
    for name, why in licence_needs(plan, other_pools):
        status = next((s for n, s in licences.items() if n.lower() == name.lower()), None)
        if status not in ACTIVE_LICENCE_STATUSES:
            out.append(f"licence {name} for {why}: the cluster reports it "
                       f"{status or 'absent (licences: ' + ', '.join(sorted(licences)) + ')'}")
    return out
