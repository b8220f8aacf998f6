# Copyright: the powerscale-dgx-ra authors
# Apache License 2.0
"""JSON from a device, read strictly: a document that names one key twice is refused, not read last-one-wins.

Python's json.loads keeps the last of two equal keys, so an answer that interleaves two objects
(``{"exports": [...], "exports": []}``) would silently become the second one. The OneFS, NVUE and MLNX-OS clients
read device answers with :func:`loads`, and say what they got when it is not the JSON they expected.
Standard library only: it runs wherever Ansible runs a module.
"""

from __future__ import annotations

import json
from typing import Any


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one JSON object (two answers interleaved?)")
        out[key] = value
    return out


def loads(text: str | bytes) -> Any:
    """json.loads that raises ValueError (json.JSONDecodeError is one) on a key repeated in one object."""
    return json.loads(text, object_pairs_hook=_no_duplicates)


def kind(value: Any) -> str:
    """What a decoded JSON value is, in the words of a message: 'a JSON list', 'JSON null', ..."""
    names = {dict: "a JSON object", list: "a JSON list", str: "a JSON string", bool: "a JSON boolean",
             int: "a JSON number", float: "a JSON number", type(None): "JSON null"}
    return names.get(type(value), type(value).__name__)
