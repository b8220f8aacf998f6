#!/usr/bin/python
"""Ansible module dgx_nfs_live: compare live NFS mounts with the inventory and remount the ones that drifted."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dgx_nfs_live
short_description: Compare the live NFS mounts of a DGX with the inventory, remount the ones whose options drifted
description:
  - Reads C(/proc/mounts) and compares every share of O(mounts) with its desired source and options
    (vers, proto, nconnect, hard/soft, timeo, retrans, fsc, the kernel-visible flags such as noatime or ro,
    and rsize/wsize).
  - rsize/wsize are negotiated; a live value below the request is reported in C(negotiated) (and as a
    warning), not as drift, unless the request changed since the share was mounted (the fstab entry as it was
    before this run, read by the module, tells).
  - With O(remount=true), drifted shares are unmounted and mounted again with the desired source and options.
    ansible.posix.mount with state=mounted only rewrites fstab for a mounted share, and NFS cannot change
    vers, proto or nconnect with C(mount -o remount).
  - Linux shares one NFS client, and so its TCP connections (nconnect), between every mount of the same
    server, version and transport; a remounted share would join the old client. So every share of this list
    that mounts from the server of a drifted share is unmounted, and then all of them are mounted again. When
    a share that the list does not own also mounts from that server and nconnect must change, nothing is
    touched and the shares are reported as blocked.
  - A busy share is left mounted (the shares already unmounted in its group are mounted back at once with
    the new options) and reported with C(busy) and the processes that hold it; the module does not fail then,
    the caller decides. A mount point that holds a non-NFS filesystem is never touched (C(foreign)).
  - Mounts that are absent are left to ansible.posix.mount; nothing outside O(mounts) is ever unmounted.
  - With O(packages), it first reads whether those Debian packages are installed (as M(host_state) does, the
    same rule); when one is not, it reads and changes nothing else and returns them in RV(packages_missing);
    install them, then call this module again. A converged node costs one call, where a package read before it
    would cost two.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  mounts:
    description: The shares of this DGX, each C({path, src, opts, fstype}) as planned by dgx_nfs_plan.
    type: list
    elements: dict
    required: true
  remount:
    description: Unmount and mount drifted shares (with the other shares of their server). False only reports.
    type: bool
    default: false
  warn_negotiated:
    description: Emit an Ansible warning for each rsize/wsize the server granted below the request.
    type: bool
    default: true
  fstab:
    description: fstab file read for the options the shares were last requested with.
    type: path
    default: /etc/fstab
  packages:
    description: Debian packages the mounts need (the NFS client); see the description.
    type: list
    elements: str
    default: []
  proc_mounts:
    description: Live mount table.
    type: path
    default: /proc/mounts
extends_documentation_fragment:
  - module_attributes.changes
  - module_attributes.dgx_host
  - ansible.builtin.action_common_attributes
notes:
  - In check mode the shares that would be remounted are reported as changed, with a diff; nothing is unmounted.
seealso:
  - module: dgx_nfs_plan
  - module: ansible.posix.mount
  - module: powerscale_nfs_export
  - name: Role dgx_nfs
    link: roles/dgx_nfs/README.md
    description: The DGX NFS client role.
"""

EXAMPLES = r"""
- name: Remount the shares whose live options drifted
  dgx_nfs_live:
    mounts:
      - path: /mnt/training
        src: "198.51.100.21:/ifs/data/training"
        opts: "vers=3,proto=tcp,nconnect=8,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noatime,_netdev"
        fstype: nfs
    remount: true
  register: live_before
"""

RETURN = r"""
packages_missing:
  description: The packages of O(packages) that are not installed; when not empty, C(mounts) is empty.
  returned: always
  type: list
  elements: str
mounts:
  description: One result per share of O(mounts), in the same order.
  returned: always
  type: list
  elements: dict
  contains:
    path: {description: Mount point, type: str}
    src: {description: Desired source, type: str}
    opts: {description: Desired options, type: str}
    fstype: {description: Desired filesystem type, type: str}
    changed: {description: "Remounted in this run (or would be, in check mode)", type: bool}
    mounted: {description: Something is mounted there after this run, type: bool}
    in_sync: {description: Mounted from the desired source with the desired options, type: bool}
    fstab_in_sync:
      description: O(fstab) already holds the share as ansible.posix.mount writes it (read before this run)
      type: bool
    remounted: {description: Unmounted and mounted again in this run, type: bool}
    busy: {description: Drifted but in use; left as it was, type: bool}
    blocked: {description: Why a needed remount was not attempted (empty when none), type: str}
    holders: {description: "C(fuser -vm) output for a busy share", type: str}
    foreign: {description: Non-empty when the mount point holds a non-NFS filesystem, type: str}
    drift: {description: "Options that differed before any remount (option, desired, live, note)", type: list}
    negotiated: {description: rsize/wsize granted below the request, type: list}
    live: {description: "The /proc/mounts entry after this run (src, fstype, options)", type: dict}
    summary: {description: One line for a human, type: str}
"""

import os  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.dgx_nfs import (  # noqa: E402
    DesiredMount,
    compare_live,
    describe,
    find_mount,
    fstab_in_sync,
    parse_mounts_table,
    plan_cycles,
)
from ansible.module_utils.host_state import missing_packages, read_dpkg_status  # noqa: E402


def read_text(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def entry_dict(entry) -> dict:
    return {} if entry is None else {"src": entry.src, "fstype": entry.fstype, "options": entry.raw_options}


class Runner:
    """umount/mount with the module's run_command; remembers what it did."""

    def __init__(self, module: AnsibleModule):
        self.module = module

    def umount(self, path: str) -> tuple[bool, str]:
        rc, out, err = self.module.run_command(["umount", path])
        return rc == 0, (out + err).strip()

    def mount(self, wanted: DesiredMount) -> tuple[bool, str]:
        rc, out, err = self.module.run_command(["mount", "-t", wanted.fstype, "-o", wanted.opts, wanted.src,
                                                wanted.path])
        return rc == 0, (out + err).strip()

    def holders(self, path: str) -> str:
        fuser = self.module.get_bin_path("fuser")
        if fuser is None:
            return "unknown (fuser is not installed: try lsof " + path + ")"
        _rc, out, err = self.module.run_command([fuser, "-vm", path])
        return (out + err).strip()


def cycle(runner: Runner, group: list[DesiredMount], results: dict[str, dict]) -> None:
    """Unmount every share of the group, then mount them all; stop and restore at the first busy share."""
    unmounted: list[DesiredMount] = []
    for wanted in reversed(group):
        ok, message = runner.umount(wanted.path)
        if ok:
            unmounted.append(wanted)
            continue
        busy = "busy" in message.lower()
        for back in reversed(unmounted):
            mounted, again = runner.mount(back)
            if not mounted:
                runner.module.fail_json(msg=f"{back.path} was unmounted to apply new options and could not be "
                                            f"mounted again: {again}. The share is NOT mounted now.",
                                        mounts=list(results.values()))
            results[back.path]["remounted"] = True
        if not busy:
            runner.module.fail_json(msg=f"umount {wanted.path} failed: {message}", mounts=list(results.values()))
        for member in group:
            results[member.path]["busy"] = True
        results[wanted.path]["holders"] = runner.holders(wanted.path)
        return
    for wanted in group:
        ok, message = runner.mount(wanted)
        if not ok:
            runner.module.fail_json(msg=f"{wanted.path} was unmounted to apply new options, but mounting "
                                        f"{wanted.src} with {wanted.opts} failed: {message}. The share is NOT "
                                        "mounted now.", mounts=list(results.values()))
        results[wanted.path]["remounted"] = True


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            mounts=dict(type="list", elements="dict", required=True),
            remount=dict(type="bool", default=False),
            warn_negotiated=dict(type="bool", default=True),
            fstab=dict(type="path", default="/etc/fstab"),
            proc_mounts=dict(type="path", default="/proc/mounts"),
            packages=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    if p["packages"]:
        status = read_dpkg_status(module.run_command, p["packages"], lambda msg: module.fail_json(msg=msg))
        missing = missing_packages(p["packages"], status)
        if missing:
            module.exit_json(changed=False, packages_missing=missing, mounts=[])
    wanted = [DesiredMount(src=str(m["src"]), path=str(m["path"]).rstrip("/") or "/",
                           fstype=str(m.get("fstype") or "nfs"), options=tuple(str(m["opts"]).split(",")))
              for m in p["mounts"]]
    fstab_text = read_text(p["fstab"])
    fstab = parse_mounts_table(fstab_text)
    live_table = parse_mounts_table(read_text(p["proc_mounts"]))
    before = {w.path: compare_live(w, find_mount(live_table, w.path), find_mount(fstab, w.path)) for w in wanted}
    results = {w.path: {"path": w.path, "src": w.src, "opts": w.opts, "fstype": w.fstype, "changed": False,
                        "remounted": False, "busy": False, "blocked": "", "holders": "",
                        "fstab_in_sync": fstab_in_sync(fstab_text, w),
                        "foreign": before[w.path].foreign, "drift": [d.as_dict() for d in before[w.path].drift]}
               for w in wanted}
    diff_before, diff_after = [], []
    if p["remount"]:
        for group, blocked in plan_cycles(wanted, before, live_table):
            if blocked:
                for member in group:
                    results[member.path]["blocked"] = blocked
                continue
            for member in group:
                results[member.path]["changed"] = True
                live = find_mount(live_table, member.path)
                diff_before.append(f"{live.src} {member.path} {live.fstype} {live.raw_options}")
                diff_after.append(f"{member.src} {member.path} {member.fstype} {member.opts}")
            if not module.check_mode:
                cycle(Runner(module), group, results)
                if any(results[m.path]["busy"] for m in group):
                    for member in group:
                        results[member.path]["changed"] = results[member.path]["remounted"]

    after_table = parse_mounts_table(read_text(p["proc_mounts"])) if not module.check_mode else live_table
    for w in wanted:
        result = results[w.path]
        live = find_mount(after_table, w.path)
        after = compare_live(w, live, None if result["remounted"] else find_mount(fstab, w.path))
        result.update(mounted=after.mounted, in_sync=after.in_sync, live=entry_dict(live),
                      negotiated=[d.as_dict() for d in after.negotiated])
        if result["busy"]:
            result["summary"] = (f"BUSY, left mounted with its old options ({describe(before[w.path])}); stop what "
                                 f"holds the shares of this server (fuser -vm {w.path}) and re-run")
        elif result["blocked"]:
            result["summary"] = f"NOT remounted ({describe(before[w.path])}): {result['blocked']}"
        elif result["remounted"]:
            result["summary"] = f"remounted ({describe(before[w.path])}); now {describe(after)}"
        elif result["changed"]:
            result["summary"] = f"would be remounted ({describe(before[w.path])})"
        else:
            result["summary"] = describe(after)
        if p["warn_negotiated"]:
            for diff in after.negotiated:
                module.warn(f"{w.path}: the server negotiated {diff.option}={diff.live}, less than the requested "
                            f"{diff.desired}; throughput per mount may be lower than planned")
    output = {"changed": any(r["changed"] for r in results.values()), "mounts": [results[w.path] for w in wanted],
              "packages_missing": []}
    if diff_before:
        output["diff"] = {"before": "\n".join(diff_before) + "\n", "after": "\n".join(diff_after) + "\n"}
    module.exit_json(**output)


if __name__ == "__main__":
    main()
