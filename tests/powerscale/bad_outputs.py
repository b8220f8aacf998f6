"""Bad answers of the OneFS Platform API: a collection cut mid-JSON, printed twice, a key twice, an HTML page, an
error body with HTTP 200, no body, wrong types, a login without its cookie. Each is what the cluster (or a proxy in
front of it) sends for one request of an otherwise healthy exchange, and goes through what the modules run: the
client of module_utils/onefs.py (session login, GET /platform/latest, the collection read with resume tokens)
under library/powerscale_nfs_export.py's and library/powerscale_quota.py's own run(), in check mode. Every one
must end in an OneFSError naming what was expected; none may come back as "no change" or "would create" (an
export read as absent is created twice), nor crash the module.

    .venv/bin/python -m tests.powerscale.bad_outputs     one line per case, then "N bad outputs, N rejected ..."

The healthy answers are real where a capture exists (tests/fixtures/onefs/real/SOURCES): the export list is
nfs-exports-one-gopowerscale.json, the error body error-aec-not-found-vault-plugin.json (OneFS's own layout).
The session, /platform/latest and quota answers have the shapes of tests/powerscale/fixtures/ (written from the
PAPI documentation and Dell's clients, not captures).
"""

from __future__ import annotations

import email.message
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # run as `python -m tests.<area>.bad_outputs` from there

from tests.device_text import Outcome, cut, judge_call, print_corpus, run_corpus, use_project_modules  # noqa: E402

use_project_modules()

import powerscale_nfs_export as export_module  # noqa: E402
import powerscale_quota as quota_module  # noqa: E402
from ansible.module_utils import onefs  # noqa: E402

REAL = ROOT / "tests/fixtures/onefs/real"
SHAPES = ROOT / "tests/powerscale/fixtures"
EXPORTS = (REAL / "nfs-exports-one-gopowerscale.json").read_text()
ERROR = (REAL / "error-aec-not-found-vault-plugin.json").read_text()
QUOTAS = (SHAPES / "quota_list.json").read_text()
EXPORTS_PATH = "/platform/4/protocols/nfs/exports"
QUOTAS_PATH = "/platform/1/quota/quotas"
LOGIN = ("POST", onefs.SESSION_PATH)
LATEST = ("GET", "/platform/latest")
HTML_502 = ("<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1>"
            "</center>\r\n</body>\r\n</html>\r\n")


@dataclass(frozen=True)
class Answer:
    status: int
    body: str
    cookies: tuple[str, ...] = ()


SESSION = Answer(201, (SHAPES / "session_create.json").read_text(),
                 ("isisessid=0f1e2d3c4b5a; Path=/; HttpOnly; Secure", "isicsrf=5a4b3c2d1e0f; Path=/; Secure"))
HEALTHY: dict[tuple[str, str], Answer] = {
    LOGIN: SESSION,
    LATEST: Answer(200, (SHAPES / "platform_latest.json").read_text()),
    ("GET", EXPORTS_PATH): Answer(200, EXPORTS),
    ("GET", QUOTAS_PATH): Answer(200, QUOTAS),
}


@dataclass(frozen=True)
class Bad:
    tool: str                                   # the request whose answer is bad
    what: str
    answers: dict[tuple[str, str], Answer] = field(default_factory=dict)   # replaces HEALTHY's for those requests
    module: str = "export"                      # export | quota: whose run() reads it


class CannedClient(onefs.OneFSClient):
    """The real client, answered from a table instead of the network (no retry pause: retries=0)."""

    def __init__(self, answers: dict[tuple[str, str], Answer]):
        super().__init__(onefs.OneFSConnection(host="192.0.2.10", user="svc-ansible", password="unused", retries=0),
                         sleep=lambda _s: None)
        self.answers = answers

    def _send_once(self, method: str, path: str, query: dict[str, Any] | None, body: bytes | None,
                   headers: dict[str, str]) -> tuple[int, bytes, Any]:
        answer = self.answers[(method, path)]
        message = email.message.Message()
        for cookie in answer.cookies:
            message["Set-Cookie"] = cookie
        return answer.status, answer.body.encode(), message


@dataclass
class CheckModeModule:
    params: dict[str, Any]
    check_mode: bool = True


def _defaults(spec: dict[str, Any]) -> dict[str, Any]:
    return {name: opt.get("default") for name, opt in spec.items()}


# The task that matches the real export exactly: healthy, it is "no change".
EXPORT_TASK = {**_defaults(export_module.argument_spec()), "path": "/ifs/volumes/libstorage/testing",
               "clients": ["10.50.0.111"], "security_flavors": ["unix"], "read_only": False, "all_dirs": False,
               "description": "", "map_root": {"enabled": True, "user": "root", "primary_group": None},
               "map_non_root": {"enabled": True, "user": "root", "primary_group": None}}
QUOTA_TASK = {**_defaults(quota_module.argument_spec()), "path": "/ifs/data/scratch",
              "thresholds": {"hard": 268435456, "soft": 201326592, "soft_grace": 3600, "advisory": 134217728}}


def run_module(case: Bad) -> dict[str, Any]:
    client = CannedClient({**HEALTHY, **case.answers})
    if case.module == "quota":
        return quota_module.run(CheckModeModule(dict(QUOTA_TASK)), client)
    return export_module.run(CheckModeModule(dict(EXPORT_TASK)), client)


def _exports(body: str, status: int = 200) -> dict[tuple[str, str], Answer]:
    return {("GET", EXPORTS_PATH): Answer(status, body)}


def _quotas(body: str) -> dict[tuple[str, str], Answer]:
    return {("GET", QUOTAS_PATH): Answer(200, body)}


def _field(name: str, value: str) -> str:
    """The real export with one field's value replaced (its text as OneFS laid it out)."""
    start = EXPORTS.index(f'"{name}" :') + len(f'"{name}" :')
    end = min(i for i in (EXPORTS.find(",", start), EXPORTS.find(" }", start)) if i > 0)
    if name == "clients":
        end = EXPORTS.index("]", start) + 1
    return EXPORTS[:start] + " " + value + EXPORTS[end:]


CASES: list[Bad] = [
    Bad("exports", "list cut in the middle of the export", _exports(cut(EXPORTS, '"map_retry"'))),
    Bad("exports", "list cut before its closing brackets", _exports(EXPORTS[: EXPORTS.rindex("}", 0, -3) + 1])),
    Bad("exports", "the answer printed twice", _exports(EXPORTS + EXPORTS)),
    Bad("exports", "the real AEC_NOT_FOUND error body with HTTP 200", _exports(ERROR)),
    Bad("exports", "the real AEC_NOT_FOUND error body with HTTP 404", _exports(ERROR, 404)),
    Bad("exports", "empty body with HTTP 200", _exports("")),
    Bad("exports", "JSON null with HTTP 200", _exports("null")),
    Bad("exports", "a proxy's HTML 502 page with HTTP 200", _exports(HTML_502)),
    Bad("exports", "HTTP 500 with an HTML page (no retry left)", _exports(HTML_502, 500)),
    Bad("exports", "no 'exports' list, only resume and total", _exports('{ "resume" : null, "total" : 1 }')),
    Bad("exports", "'exports' an object instead of a list",
        _exports(EXPORTS.replace('"exports" :  [', '"exports" : ', 1).replace(" } ] }", " } }"))),
    Bad("exports", "the key 'exports' twice, the second list empty",
        _exports(EXPORTS[: EXPORTS.rindex("}")] + ', "exports" : [] }')),
    Bad("exports", "items that are export ids, not objects", _exports('{ "exports" : [ 24 ], "resume" : null }')),
    Bad("exports", "a resume token that is a number (the same page again)",
        _exports(EXPORTS[: EXPORTS.rindex("}")] + ', "resume" : 1 }')),
    Bad("exports", "paths a string, not a list", _exports(_field("paths", '"/ifs/volumes/libstorage/testing"'))),
    Bad("exports", "clients a string, not a list", _exports(_field("clients", '"10.50.0.111"'))),
    Bad("session", "login answered with an HTML page and no session cookie",
        {LOGIN: Answer(200, "<html><body><form action='/session/1/session'>Log in</form></body></html>")}),
    Bad("session", "login refused (HTTP 401, AEC_UNAUTHORIZED)",
        {LOGIN: Answer(401, (SHAPES / "error_unauthorized.json").read_text())}),
    Bad("session", "login answered HTTP 503 (no retry left)", {LOGIN: Answer(503, HTML_502)}),
    Bad("platform/latest", "latest is empty", {LATEST: Answer(200, '{"latest": ""}')}),
    Bad("platform/latest", "a list instead of an object", {LATEST: Answer(200, '["17"]')}),
    Bad("platform/latest", "cut mid-JSON", {LATEST: Answer(200, '{"latest": "1')}),
    Bad("quotas", "the real AEC_NOT_FOUND error body with HTTP 200", _quotas(ERROR), "quota"),
    Bad("quotas", "the key 'quotas' twice, the second list empty",
        _quotas(QUOTAS[: QUOTAS.rindex("}")] + ', "quotas": []}'), "quota"),
    Bad("quotas", "list cut inside the thresholds", _quotas(cut(QUOTAS, '"soft":')), "quota"),
    Bad("quotas", "thresholds a number, not an object",
        _quotas(QUOTAS.replace(QUOTAS[QUOTAS.index('{"advisory"'): QUOTAS.index("},", QUOTAS.index('{"advisory"')) + 1],
                               "268435456")), "quota"),
]


def judge(case: Bad) -> Outcome:
    def call() -> tuple[bool, str]:
        result = run_module(case)
        return False, f"changed={result['changed']} id={result.get('id')!r}"
    return judge_call(case, call, (onefs.OneFSError,))


def healthy_passes() -> bool:
    """The real export and the quota shape read as they are: no change, no error."""
    try:
        return not run_module(Bad("-", "-"))["changed"] and not run_module(Bad("-", "-", module="quota"))["changed"]
    except onefs.OneFSError:
        return False


def run_all() -> list[Outcome]:
    return run_corpus(CASES, judge, healthy_passes)


if __name__ == "__main__":
    sys.exit(print_corpus(run_all(), "the healthy answers do not read as no change: the corpus proves nothing"))
