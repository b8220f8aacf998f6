"""A small client for the Cumulus Linux 5.x NVUE REST API (``/nvue_v1``), and its revision workflow.

The workflow is the documented one: POST /nvue_v1/revision creates a changeset revision; PATCH /nvue_v1/?rev=ID
merges a subtree into it (null deletes); PATCH /nvue_v1/revision/ID with {"state": "apply", "auto-prompt":
{"ays": "ays_yes"}} applies it; GET /nvue_v1/revision/ID reports the state until it is "applied" (or one of the
failure states, with the switch's issues in transition.issue). GET /nvue_v1/?rev=applied&filled=false returns
the applied configuration; GET without rev returns the operational state.

Every answer below 400 must be a JSON object (each documented answer is one): a body that is cut, doubled,
empty, an HTML page, names a key twice, or is an RFC 7807 problem (``{"status": 4xx, "title", "detail"}``)
carried by a 2xx status is an NvueError saying what came back, never read as an empty configuration.
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ansible.module_utils.strict_json import kind, loads

# Revision states (NVUE transitions): reached the goal / failed for good / still working.
APPLIED_STATES = {"applied", "applied_and_saved", "auto_save"}
FAILED_STATES = {"invalid", "apply_fail", "apply_error", "ays_fail", "ignore_fail", "confirm_fail",
                 "ready_error", "verify_error"}
APPLY_BODY = {"state": "apply", "auto-prompt": {"ays": "ays_yes"}}
# Without confirmation NVUE stops at its "Are you sure?" prompt (first NVUE apply, files changed outside NVUE,
# disruptive changes) and the revision ends in ays_fail instead of overwriting anything.
APPLY_UNCONFIRMED_BODY = {"state": "apply"}
SAVE_BODY = {"state": "save", "auto-prompt": {"ays": "ays_yes"}}


@dataclass(frozen=True)
class NotJson:
    """A response body that is not JSON (or is JSON naming a key twice): its text and why it was refused."""

    text: str
    reason: str


def decode_body(raw: bytes | str | None) -> Any:
    """A response body as the client reads it: the decoded JSON, else NotJson (empty, cut, HTML, a key twice)."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else (raw or "")
    if not text.strip():
        return NotJson(text, "an empty body")
    try:
        return loads(text)
    except ValueError as exc:
        return NotJson(text, f"a body that is not JSON ({exc})")


def is_problem(body: Any) -> bool:
    """An RFC 7807 problem document, NVUE's error body: {"status": 4xx/5xx, "title": ..., "detail": ...}."""
    return (isinstance(body, dict) and isinstance(body.get("status"), int) and body["status"] >= 400
            and isinstance(body.get("title"), str))


def revision_state(rev: str, body: Any) -> dict[str, Any]:
    """A revision's {"state", "transition"} from GET /revision/ID, flat or nested under the revision id.

    The guides show both: {"state": "applied", ...} and, for a revision stopped at a prompt,
    {"4": {"state": "ays_fail", ...}} (tests/fixtures/cumulus/real/). Nested under another revision's id, the
    answer is not about `rev`: it is returned as it is, without a state of `rev`."""
    if isinstance(body, dict) and "state" not in body and len(body) == 1:
        key, inner = next(iter(body.items()))
        if key == rev and isinstance(inner, dict) and "state" in inner:
            return inner
    return body if isinstance(body, dict) else {}


class NvueError(Exception):
    """The switch answered with an error (its own text is in the message)."""

    def __init__(self, message: str, status: int | None = None, body: Any = None):
        super().__init__(message)
        self.status = status
        self.body = body


class NvueUnreachable(NvueError):
    """The API could not be reached at all (refused, timed out, TLS failure)."""


class NvueRejected(NvueError):
    """The switch refused a revision at apply (one of FAILED_STATES, e.g. ``invalid`` with its issues)."""

    def __init__(self, message: str, state: str, body: Any = None):
        super().__init__(message, body=body)
        self.state = state


class NvuePrompt(NvueError):
    """An unconfirmed apply stopped at NVUE's "Are you sure?" prompt (state ays_fail); nothing was applied."""


def error_text(body: Any) -> str:
    """The switch's own words from an error body (problem+json, a revision's issues, or plain text)."""
    if isinstance(body, NotJson):
        return body.text.strip()[:300] or "(empty body)"
    if isinstance(body, dict):
        issues = ((body.get("transition") or {}).get("issue") or {}) if "transition" in body else {}
        if issues:
            return "; ".join(str(i.get("message", i)) for i in issues.values())
        parts = [str(body[k]) for k in ("title", "detail", "message") if body.get(k)]
        if parts:
            return ": ".join(parts)
        return json.dumps(body, sort_keys=True)
    return str(body).strip()


@dataclass
class NvueClient:
    """HTTP transport is injected (``fetch(method, url, body) -> (status, parsed_body)``) so tests need no server."""

    base_url: str
    fetch: Callable[[str, str, Any], tuple[int, Any]]

    def _url(self, path: str, query: dict[str, str] | None = None) -> str:
        url = self.base_url.rstrip("/") + "/nvue_v1" + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return url

    def call(self, method: str, path: str, body: Any = None, query: dict[str, str] | None = None) -> Any:
        status, data = self.fetch(method, self._url(path, query), body)
        if status >= 400:
            raise NvueError(f"NVUE {method} {path} answered HTTP {status}: {error_text(data)}", status, data)
        if isinstance(data, NotJson):
            raise NvueError(f"NVUE {method} {path} answered HTTP {status} with {data.reason}, expected a JSON "
                            f"object: {data.text.strip()[:200]!r}", status, data)
        if not isinstance(data, dict):
            raise NvueError(f"NVUE {method} {path} answered HTTP {status} with {kind(data)} "
                            f"({str(data)[:120]!r}), expected a JSON object", status, data)
        if is_problem(data):
            raise NvueError(f"NVUE {method} {path} answered HTTP {status} with an error document (status "
                            f"{data['status']}): {error_text(data)}", status, data)
        return data

    def get(self, path: str = "/", rev: str | None = None, filled: bool | None = None) -> Any:
        query: dict[str, str] = {}
        if rev:
            query["rev"] = rev
        if filled is not None:
            query["filled"] = "true" if filled else "false"
        return self.call("GET", path, query=query or None)

    def create_revision(self) -> str:
        data = self.call("POST", "/revision", body={})
        if not isinstance(data, dict) or len(data) != 1:
            raise NvueError(f"NVUE POST /revision returned no single revision: {data!r}")
        return next(iter(data))

    def patch(self, rev: str, subtree: dict[str, Any], path: str = "/") -> Any:
        return self.call("PATCH", path, body=subtree, query={"rev": rev})

    def revision(self, rev: str) -> dict[str, Any]:
        body = self.call("GET", "/revision/" + urllib.parse.quote(rev, safe=""))
        info = revision_state(rev, body)
        if not isinstance(info.get("state"), str):
            raise NvueError(f"NVUE GET /revision/{rev} answered no state of revision {rev}: {str(body)[:200]!r}",
                            body=body)
        return info

    def save(self) -> Any:
        """Save the applied configuration to the startup configuration (needed up to 5.8)."""
        return self.call("PATCH", "/revision/applied", body=SAVE_BODY)

    def apply(self, rev: str, timeout: float, poll: float = 1.0,
              sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic,
              confirm: bool = True) -> str:
        """Apply a revision and wait (bounded) until it is applied; raise with the switch's issues otherwise.

        ``confirm``: answer NVUE's "Are you sure?" prompt with yes (ays_yes); without it a revision that prompts
        ends in ays_fail (NvuePrompt) and nothing is overwritten."""
        self.call("PATCH", "/revision/" + urllib.parse.quote(rev, safe=""),
                  body=APPLY_BODY if confirm else APPLY_UNCONFIRMED_BODY)
        deadline = clock() + timeout
        state = "apply"
        while True:
            info = self.revision(rev)
            state = str(info.get("state", ""))
            if state in APPLIED_STATES:
                return state
            if state == "ays_fail" and not confirm:
                raise NvuePrompt(f"NVUE revision {rev} stopped at NVUE's confirmation prompt (ays_fail: "
                                 f"{error_text(info)}; {(info.get('transition') or {}).get('progress', '')})", body=info)
            if state in FAILED_STATES:
                raise NvueRejected(f"NVUE revision {rev} ended in state {state!r}: {error_text(info)}", state,
                                   body=info)
            if clock() >= deadline:
                progress = (info.get("transition") or {}).get("progress", "")
                raise NvueError(
                    f"NVUE revision {rev} still in state {state!r} after {timeout:.0f}s (progress: {progress!r}); "
                    "it may still complete on the switch: check `nv config history` before re-running",
                    body=info,
                )
            sleep(poll)
