#!/usr/bin/python
"""Ansible module dgx_nfs_live: compare a live NFS mount with the inventory and remount it when they differ."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.dgx_nfs import (
    DesiredMount,
    compare_live,
    describe,
    find_mount,
    parse_mounts_table,
)

DOCUMENTATION = r"""
---
module: dgx_nfs_live
short_description: Compare a live NFS mount with the desired one, remount it when its options drifted
description:
  - Reads C(/proc/mounts) and compares the share mounted on O(path) with the desired source and options
    vers, proto, nconnect, hard/soft, timeo, retrans, fsc, the kernel-visible flags (noatime, ro, ...) and
    rsize/wsize.
  - rsize/wsize are negotiated; a live value below the request is reported in RV(negotiated) (a warning),
    not as drift, unless the request changed since the share was mounted (the fstab entry as it was before
    this run, read by the module, tells).
  - With O(remount=true), a drifted share is unmounted and mounted again with the desired source and options
    (ansible.posix.mount with state=mounted only rewrites fstab for a mounted share; NFS cannot change vers,
    proto or nconnect with C(mount -o remount)). A busy share is left mounted as it is and reported with
    RV(busy) and the processes that hold it; the module does not fail then, the caller decides.
  - Refuses to touch a mount point that holds something other than NFS (RV(foreign)).
  - Never unmounts anything else; mounts that are absent are left to ansible.posix.mount.
version_added: "0.1.0"
author: powerscale-dgx-ra
options:
  path:
    description: Mount point.
    type: path
    required: true
  src:
    description: Desired source, C(server:/export).
    type: str
    required: true
  opts:
    description: Desired options, comma separated, as written to fstab.
    type: str
    required: true
  fstype:
    description: Filesystem type for the mount command.
    type: str
    default: nfs
  remount:
    description: Unmount and mount a drifted share. False only reports.
    type: bool
    default: false
  fstab:
    description: fstab file read for the options the share was last requested with.
    type: path
    default: /etc/fstab
  warn_negotiated:
    description: Emit an Ansible warning for each rsize/wsize the server granted below the request.
    type: bool
    default: true
  proc_mounts:
    description: Live mount table.
    type: path
    default: /proc/mounts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: full
notes:
  - In check mode a drifted share is reported as changed (it would be remounted); nothing is unmounted.
"""

EXAMPLES = r"""
- name: Remount the training share if its live options drifted
  dgx_nfs_live:
    path: /mnt/training
    src: "198.51.100.21:/ifs/data/training"
    opts: "vers=3,proto=tcp,nconnect=8,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noatime,_netdev"
    remount: true
  register: training_live
"""

RETURN = r"""
mounted:
  description: Whether something is mounted on O(path) (after any remount).
  returned: always
  type: bool
in_sync:
  description: Mounted from the desired source with the desired options (negotiated rsize/wsize allowed).
  returned: always
  type: bool
remounted:
  description: Whether the module unmounted and mounted the share in this run.
  returned: always
  type: bool
busy:
  description: The share drifted but could not be unmounted because it is in use; it was left as it was.
  returned: always
  type: bool
holders:
  description: Output of C(fuser -vm) for a busy share (who holds it).
  returned: when busy
  type: str
foreign:
  description: Non-empty when the mount point holds a non-NFS filesystem (left untouched).
  returned: always
  type: str
drift:
  description: Options that differ (option, desired, live, note), before any remount.
  returned: always
  type: list
  elements: dict
negotiated:
  description: rsize/wsize the server granted below the request (after any remount).
  returned: always
  type: list
  elements: dict
live:
  description: The /proc/mounts entry (src, fstype, options) after any remount; empty when not mounted.
  returned: always
  type: dict
summary:
  description: One line for a human.
  returned: always
  type: str
"""


def read_text(path: str) -> str:
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read()


def live_entry(proc_mounts: str, path: str):
    return find_mount(parse_mounts_table(read_text(proc_mounts)), path)


def entry_dict(entry) -> dict:
    if entry is None:
        return {}
    return {"src": entry.src, "fstype": entry.fstype, "options": entry.raw_options}


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            src=dict(type="str", required=True),
            opts=dict(type="str", required=True),
            fstype=dict(type="str", default="nfs"),
            remount=dict(type="bool", default=False),
            fstab=dict(type="path", default="/etc/fstab"),
            warn_negotiated=dict(type="bool", default=True),
            proc_mounts=dict(type="path", default="/proc/mounts"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    path = p["path"].rstrip("/") or "/"
    desired = DesiredMount(src=p["src"], path=path, fstype=p["fstype"], options=tuple(p["opts"].split(",")))
    previous = find_mount(parse_mounts_table(read_text(p["fstab"])), path)
    live = live_entry(p["proc_mounts"], path)
    before = compare_live(desired, live, previous)
    result = dict(changed=False, remounted=False, busy=False, holders="", foreign=before.foreign,
                  drift=[d.as_dict() for d in before.drift], summary=describe(before))

    if p["remount"] and before.mounted and not before.foreign and before.drift:
        result["changed"] = True
        result["diff"] = {"before": f"{live.src} {path} {live.fstype} {live.raw_options}\n",
                          "after": f"{desired.src} {path} {desired.fstype} {desired.opts}\n"}
        if not module.check_mode:
            rc, out, err = module.run_command(["umount", path])
            if rc != 0:
                busy = "busy" in (out + err).lower()
                if not busy:
                    module.fail_json(msg=f"umount {path} failed (rc {rc}): {(out + err).strip()}", **result)
                _rc, holders_out, holders_err = module.run_command(["fuser", "-vm", path])
                result.update(changed=False, busy=True, holders=(holders_out + holders_err).strip(),
                              summary=f"BUSY, left mounted with its old options ({describe(before)}); stop "
                                      f"what holds it (fuser -vm {path}) and re-run")
                result.pop("diff")
            else:
                rc, out, err = module.run_command(["mount", "-t", p["fstype"], "-o", desired.opts,
                                                   desired.src, path])
                if rc != 0:
                    module.fail_json(msg=f"{path} was unmounted to apply new options, but mounting "
                                         f"{desired.src} with {desired.opts} failed (rc {rc}): "
                                         f"{(out + err).strip()}. The share is NOT mounted now.", **result)
                result["remounted"] = True

    after_live = live_entry(p["proc_mounts"], path) if result["remounted"] else live
    after = compare_live(desired, after_live, None if result["remounted"] else previous)
    if result["remounted"]:
        result["summary"] = f"remounted ({describe(before)}); now {describe(after)}"
    elif not result["busy"] and not (module.check_mode and result["changed"]):
        result["summary"] = describe(after)
    result.update(mounted=after.mounted, in_sync=after.in_sync, live=entry_dict(after_live),
                  negotiated=[d.as_dict() for d in after.negotiated])
    if p["warn_negotiated"]:
        for diff in after.negotiated:
            module.warn(f"{path}: the server negotiated {diff.option}={diff.live}, less than the requested "
                        f"{diff.desired}; throughput per mount may be lower than planned")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
