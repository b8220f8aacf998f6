"""Edits of real device outputs for the bad-input corpora (tests/validation/broken.py, tests/dgx/bad_outputs.py)."""

from __future__ import annotations

import re


def ibstat_set(text: str, ca: str, field: str, value: str) -> str:
    """ibstat's output with one field of CA ``ca``'s port block (``State``, ``Rate``...) set to ``value``."""
    head, sep, rest = text.partition(f"CA '{ca}'\n")
    block, nxt, tail = rest.partition("CA '")
    block = re.sub(rf"(?m)^([ \t]+{re.escape(field)}:[ \t]*)[^\n]*", lambda m: m.group(1) + value, block)
    return head + sep + block + nxt + tail
