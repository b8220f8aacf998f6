#!/usr/bin/python
"""Ansible module dgx_ngc_plan: check the NGC image inventory and compute what each DGX pulls and tags."""

from __future__ import annotations

DOCUMENTATION = r"""
---
module: dgx_ngc_plan
short_description: Check the NGC image inventory and plan pulls, retags and conversions
description:
  - Checks C(ngc_images) (and C(ngc_optional_images) when C(ngc_pull_optional)) are C(<ngc_registry>/<org>/<repo>)
    names with an explicit tag (never latest) and, where given, a C(sha256:) digest; checks C(ngc_mirror).
  - Plans each image. Direct mode pulls C(nvcr.io/<repo>@<digest>) (or C(:<tag>) when no digest is pinned).
    Mirror mode pulls the same repository path from C(ngc_mirror.registry) and retags it to the C(nvcr.io)
    name, so that users and validation refer to one name whatever the site.
  - Takes no secret; changes nothing; safe in check mode. Warns for every image pinned by tag only.
version_added: "0.1.0"
author: powerscale-dgx-ra authors (!UNKNOWN)
options:
  host:
    description: Inventory name of the DGX the plan is for (the host column of every problem).
    type: str
    required: true
  ngc_registry:
    description: The NGC registry the image names live on.
    type: str
    default: nvcr.io
  ngc_images:
    description: Images every DGX must hold (name, tag, digest, purpose).
    type: list
    elements: raw
    required: true
  ngc_optional_images:
    description: Images pulled only when O(ngc_pull_optional) is true.
    type: list
    elements: raw
    default: []
  ngc_pull_optional:
    description: Pull the optional images too.
    type: bool
    default: false
  ngc_mirror:
    description: Mirror settings (enabled, registry, username, ca_path). No password here.
    type: dict
    default: {enabled: false}
extends_documentation_fragment:
  - module_attributes.reads
  - module_attributes.computation
  - ansible.builtin.action_common_attributes
seealso:
  - module: host_state
  - name: Role ngc
    link: roles/ngc/README.md
    description: The NGC container role and its inventory variables.
"""

EXAMPLES = r"""
- name: Plan the NGC images
  dgx_ngc_plan:
    host: "{{ inventory_hostname }}"
    ngc_registry: "{{ ngc_registry }}"
    ngc_images: "{{ ngc_images }}"
    ngc_mirror: "{{ ngc_mirror | dict2items | rejectattr('key', 'equalto', 'password') | items2dict }}"
  delegate_to: localhost
  register: ngc_plan
"""

RETURN = r"""
login_registry:
  description: Registry the DGX logs in to (the mirror in mirror mode, else the NGC registry).
  returned: success
  type: str
  sample: nvcr.io
images:
  description: One entry per image.
  returned: success
  type: list
  elements: dict
  contains:
    source: {description: "What is pulled (repository@digest, or repository:tag when unpinned)", type: str}
    source_repository: {description: Repository pulled from, type: str}
    target: {description: The NGC name:tag the image ends up under, type: str}
    target_name: {description: NGC repository name, type: str}
    tag: {description: Tag, type: str}
    digest: {description: Pinned digest or empty, type: str}
    file_stem: {description: "enroot-style file name stem (nvidia+pytorch+24.05-py3)", type: str}
    purpose: {description: Purpose from the inventory, type: str}
unpinned:
  description: Targets pinned by tag only.
  returned: success
  type: list
  elements: str
pin_warnings:
  description: The inventory rules' warnings (an image pinned by tag only), one line each; the module warns them.
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule  # noqa: E402
from ansible.module_utils.dgx_ngc import image_from_entry, inventory_problems, selected_images  # noqa: E402
from ansible.module_utils.inventory_problem import ERROR, WARNING, render_table  # noqa: E402


def build_plan(params: dict) -> tuple[dict, list[dict]]:
    host = params["host"]
    registry = params["ngc_registry"]
    mirror = params["ngc_mirror"] or {}
    problems = inventory_problems(host, params["ngc_images"] or [], params["ngc_optional_images"] or [],
                                  params["ngc_pull_optional"], mirror, registry)
    errors = [p.as_dict() for p in problems if p.severity == ERROR]
    if errors:
        return {}, errors
    mirror_registry = mirror.get("registry") if mirror.get("enabled") else ""
    planned, unpinned = [], []
    for entry in selected_images(params["ngc_images"], params["ngc_optional_images"], params["ngc_pull_optional"]):
        image = image_from_entry(entry)
        source = image.on_registry(mirror_registry) if mirror_registry else image
        planned.append({
            "source": f"{source.name}@{image.digest}" if image.digest else source.tagged,
            "source_repository": source.name,
            "target": image.tagged,
            "target_name": image.name,
            "tag": image.tag,
            "digest": image.digest,
            "file_stem": image.file_stem,
            "purpose": image.purpose,
        })
        if not image.digest:
            unpinned.append(image.tagged)
    return {"login_registry": mirror_registry or registry, "images": planned, "unpinned": unpinned,
            "pin_warnings": [p.line() for p in problems if p.severity == WARNING]}, []


def main() -> None:
    module = AnsibleModule(
        argument_spec=dict(
            host=dict(type="str", required=True),
            ngc_registry=dict(type="str", default="nvcr.io"),
            ngc_images=dict(type="list", elements="raw", required=True),
            ngc_optional_images=dict(type="list", elements="raw", default=[]),
            ngc_pull_optional=dict(type="bool", default=False),
            ngc_mirror=dict(type="dict", default={"enabled": False}),
        ),
        supports_check_mode=True,
    )
    if not module.params["ngc_images"]:
        module.fail_json(msg="ngc_images is empty: list at least the PyTorch image validation uses (ngc.yml)")
    plan, rows = build_plan(module.params)
    if rows:
        module.fail_json(msg="NGC image inventory is invalid; nothing was changed:\n"
                         + render_table(rows, "ngc (images)"), problems=rows)
    for warning in plan["pin_warnings"]:
        module.warn(warning)
    module.exit_json(changed=False, **plan)


if __name__ == "__main__":
    main()
