"""Read a training's result document: the ``<mode>-r<k>.json`` that rank 0 of validation/runners/ddp_train.py writes
(mode, model, backend, device, world_size, nodes, batch_size_per_rank, steps, warmup_steps, image_size,
step_times_s, rank_mean_step_s, samples_per_s, complete, errors, dataset).

``parse`` refuses what is not a JSON object (DdpParseError); ``done`` names what the training says it ran as
validation/asked.yml names the asked parameters.
"""

from __future__ import annotations

import json
from typing import Any


class DdpParseError(ValueError):
    """The input is not a training result object."""


def parse(text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DdpParseError(str(exc)) from None
    if not isinstance(doc, dict):  # `null` too: a sample with no result is a problem, not a silent gap
        raise DdpParseError(f"a JSON {type(doc).__name__}, not a training result object")
    return doc


def done(doc: dict[str, Any]) -> dict[str, Any]:
    """The training as its result records it; timed_steps: how many steps were timed (step_times_s)."""
    timed = doc.get("step_times_s")
    nodes = doc.get("nodes")
    out = {key: doc.get(key) for key in ("model", "steps", "warmup_steps", "batch_size_per_rank", "image_size",
                                          "world_size", "backend", "device")}
    out["timed_steps"] = len(timed) if isinstance(timed, list) else None
    out["nodes"] = sorted({str(n) for n in nodes}) if isinstance(nodes, list) else None
    return out
