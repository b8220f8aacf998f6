"""Resolve an inventory value once where many hosts share it.

A group_vars value (the compute cable map, nfs_server_map, dgx_models) is one object in every host's variables.
Templating it for each host costs hosts x its size, which grows with the square of the site. A value that holds no
template resolves to the same data for every host: ``SharedValues.resolve`` renders it once and gives every host
that result; a value with a template anywhere inside is rendered for each host, in that host's context.

Used by preflight's inventory phase (plugins/action/preflight_inventory.py) and the cable plan
(validation/inventory_layers.py ``AnsibleInventory.templated``). The values handed out are shared: callers read
them and never change them. Standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

# A string shorter than this is rendered every time: caching it saves nothing.
SHORT = 64


def has_template(raw: Any) -> bool:
    """Whether a raw inventory value holds Jinja anywhere, or a vault-encrypted string (resolved on access)."""
    if type(raw).__name__ == "EncryptedString":
        return True
    if isinstance(raw, str):
        return "{{" in raw or "{%" in raw or "{#" in raw
    if isinstance(raw, Mapping):
        return any(has_template(k) or has_template(v) for k, v in raw.items())
    if isinstance(raw, (list, tuple, set)):
        return any(has_template(v) for v in raw)
    return False


class SharedValues:
    """One resolution per shared raw value without a template (keyed by the raw object's identity)."""

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, Any]] = {}

    def resolve(self, raw: Any, render: Callable[[], Any]) -> Any:
        if raw is None or isinstance(raw, (bool, int, float)) or (isinstance(raw, str) and len(raw) < SHORT):
            return render()
        hit = self._seen.get(id(raw))
        if hit is not None and hit[0] is raw:
            return hit[1]
        value = render()
        if not has_template(raw):
            self._seen[id(raw)] = (raw, value)  # the raw object is kept, so its id is not reused
        return value
