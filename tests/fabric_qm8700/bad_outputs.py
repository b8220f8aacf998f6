"""Bad answers of a QM8700's management interfaces: the MLNX-OS JSON API answering with the login page, an HTML
page, an error status with HTTP 200, JSON cut or doubled, results missing, extra, out of order or not objects, a
key twice, and show commands whose data is garbled; the SSH CLI answering '%' errors, text instead of JSON, or
nothing. Each replaces one answer of a switch that is otherwise in its declared state, and goes through what
library/mlnxos_fabric.py runs: the transport's run() (module_utils/mlnxos_client.py: the JSON API's
check_results, the CLI's prompt and '%' handling), read_live_state and plan (module_utils/mlnxos_fabric.py).
Every one must end in an MlnxosError or ParseError with a reason, or in a plan whose problems stop the module;
none may plan "no change" or a change, nor crash.

    .venv/bin/python -m tests.fabric_qm8700.bad_outputs     one line per case, then "N bad outputs, N rejected ..."

Where the answers come from (tests/fixtures/mlnxos/real/SOURCES, ../constructed/README.md): `show version` is the
real 3.6.5000 capture of the mellanox.onyx collection (and its CLI text form), the Ethernet port table is real;
the InfiniBand outputs are the constructed qm8700-declared/ set (no public QM8700 capture exists). The JSON API
envelope ({"results": [{"executed_command", "status", "status_message", "data"}]}) and its refused-login answer
{"status": "ERROR", "status_message": "Invalid username or password"} are the MLNX-GW/MLNX-OS user manual's
"JSON API" chapter (known from the manual's examples, no capture). A line starting with '%' is the CLI's error
(mellanox.onyx plugins/terminal/onyx.py: terminal_stderr_re).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]  # run as `python -m tests.<area>.bad_outputs` from there

from tests.device_text import Outcome, cut, judge_call, print_corpus, run_corpus, use_project_modules  # noqa: E402

use_project_modules()

from ansible.module_utils import mlnxos_client as client  # noqa: E402
from ansible.module_utils import mlnxos_fabric as fabric  # noqa: E402

CORPUS = ROOT / "tests/fixtures/mlnxos"
DECLARED = CORPUS / "constructed/qm8700-declared"
REAL = CORPUS / "real/onyx"
HOSTNAME = "qm8700-01"
PROMPT = f"{HOSTNAME} [standalone: master] (config) # "
GATEWAY_OFF = "<html><head><title>MLNX-OS</title></head><body>JSON gateway is disabled</body></html>"
LOGIN_PAGE = ("<html><head><title>MLNX-OS Login</title></head><body><form method='post' "
              "action='/admin/launch?script=rh&amp;template=login&amp;action=login'></form></body></html>")

Data = dict[str, Any]            # command -> the JSON its output is (the `data` of a JSON API result)
Answer = Callable[[list[str], Data], str]   # (commands of one request, their data) -> the response body


def healthy_data() -> Data:
    """Every show command the modules send, answered from the declared switch (smnode with its hostname)."""
    data: Data = {}
    for command in (*fabric.SHOW_COMMANDS, *fabric.smnode_commands(HOSTNAME)):
        name = "-".join(command.split()).replace(f"-{HOSTNAME}-", "-NODE-")
        data[command] = json.loads((DECLARED / f"{name}.json").read_text())
    return data


def envelope(commands: list[str], data: Data) -> str:
    """The JSON API's answer to one request: one OK result per command."""
    return json.dumps({"results": [{"executed_command": c, "status": "OK", "status_message": "", "data": data[c]}
                                   for c in commands]}, indent=4)


@dataclass(frozen=True)
class Bad:
    tool: str                                   # json api | cli | the show command whose output is bad
    what: str
    data: Data = field(default_factory=dict)    # replaces the healthy data of those commands
    answer: Answer | None = None                # the whole body of the request that holds `request_of`
    request_of: str = "show version"
    cli: Callable[[str, str], list[str]] | None = None   # (command, healthy output) -> the chunks the CLI prints


class _Response:
    def __init__(self, body: str):
        self.body = body

    def read(self) -> bytes:
        return self.body.encode()

    def geturl(self) -> str:
        return "https://192.0.2.21/admin/launch?script=json"


class CannedApi(client.JsonApiTransport):
    """The real JSON API transport, answered from the case instead of the network; already logged in."""

    def __init__(self, respond: Callable[[list[str]], str]):
        super().__init__(client.Endpoint(host="192.0.2.21", username="admin", password="unused"))
        self.respond = respond
        self.logged_in = True

    def login(self) -> None:
        self.logged_in = True

    def _open(self, method: str, path: str, data: bytes | None, headers: dict[str, str]) -> _Response:
        return _Response(self.respond(json.loads(data or b"{}")["commands"]))


class _Channel:
    """An SSH shell channel that answers each command line with the chunks `respond` gives ("" = the session
    closes); recv() times out when it has nothing to say."""

    def __init__(self, respond: Callable[[str], list[str]]):
        self.respond = respond
        self.pending: list[str] = [PROMPT]

    def send(self, raw: bytes) -> None:
        self.pending.extend(self.respond(raw.decode().rstrip("\n")))

    def settimeout(self, _seconds: float) -> None:
        pass

    def recv(self, _size: int) -> bytes:
        if not self.pending:
            raise TimeoutError
        return self.pending.pop(0).encode()  # b"": the switch closed the session


class CannedCli(client.CliTransport):
    """The real CLI transport over a canned shell channel (no SSH)."""

    def __init__(self, respond: Callable[[str], list[str]]):
        super().__init__(client.Endpoint(host="192.0.2.21", username="admin", password="unused", timeout=1))
        self.respond = respond

    def connect(self) -> None:
        self.channel = _Channel(self.respond)  # type: ignore[assignment]
        self._read_until_prompt()
        for setup in ("no cli session paging enable", "enable", "configure terminal"):
            self._command(setup)


def api_for(case: Bad) -> CannedApi:
    data = {**healthy_data(), **case.data}

    def respond(commands: list[str]) -> str:
        if case.answer is not None and case.request_of in commands:
            return case.answer(commands, data)
        return envelope(commands, data)
    return CannedApi(respond)


def cli_for(case: Bad) -> CannedCli:
    data = {**healthy_data(), **case.data}

    def respond(line: str) -> list[str]:
        command = line.removesuffix(" | json-print")
        output = json.dumps(data[command], indent=4) if command in data else ""
        if case.cli is not None and command == case.request_of:
            return [f"{line}\n", *case.cli(command, output)]
        return [f"{line}\n{output}\n{PROMPT}" if output else f"{line}\n{PROMPT}"]
    return CannedCli(respond)


def desired() -> fabric.DesiredState:
    state, errors = fabric.check_desired(yaml.safe_load((DECLARED / "declared.yml").read_text()))
    assert not errors, errors
    return state


def read_and_plan(transport: Any) -> fabric.Plan:
    """What library/mlnxos_fabric.py does before it changes anything: read the switch, plan against the declared."""
    return fabric.plan(desired(), fabric.read_live_state(transport.run))


# ------------------------------------------------------------------------------------------- answers


def results(edit: Callable[[list[dict[str, Any]]], Any]) -> Answer:
    """The healthy envelope with its results list edited (edit returns the new list, or the new 'results')."""
    def answer(commands: list[str], data: Data) -> str:
        body = json.loads(envelope(commands, data))
        body["results"] = edit(body["results"])
        return json.dumps(body, indent=4)
    return answer


def text(body: str) -> Answer:
    return lambda commands, data: body


def _swap(items: list[Any], i: int, j: int) -> list[Any]:
    items[i], items[j] = items[j], items[i]
    return items


def _with(result: dict[str, Any], **changes: Any) -> dict[str, Any]:
    return {k: v for k, v in {**result, **changes}.items() if v is not None}


VERSION_TEXT = (REAL / "show-version.txt").read_text()
ETHERNET = json.loads((REAL / "show-interfaces-ethernet.json").read_text())
HEALTHY = healthy_data()
PORTS = HEALTHY["show interfaces ib"]
SMNODE = fabric.smnode_commands(HOSTNAME)

CASES: list[Bad] = [
    Bad("json api", "the login page again after logging in again (session not re-established)",
        answer=text(LOGIN_PAGE)),
    Bad("json api", "an HTML page: the JSON gateway is disabled", answer=text(GATEWAY_OFF)),
    Bad("json api", "the manual's ERROR answer (its refused login) to a command request, HTTP 200",
        answer=text('{"status": "ERROR", "status_message": "Invalid username or password"}')),
    Bad("json api", "answer cut in the middle of the running config",
        answer=lambda c, d: cut(envelope(c, d), "interface ib 1/9")),
    Bad("json api", "answer printed twice", answer=lambda c, d: envelope(c, d) * 2),
    Bad("json api", "six results for seven commands, all OK", answer=results(lambda r: r[:-1])),
    Bad("json api", "an eighth result from another request appended", answer=results(lambda r: [*r, r[0]])),
    Bad("json api", "the ha-role and ha-state results in swapped order",
        answer=results(lambda r: _swap(r, 2, 3)), request_of=SMNODE[0]),
    Bad("json api", "'results' an object keyed by command",
        answer=results(lambda r: {x["executed_command"]: x for x in r})),
    Bad("json api", "a result that is a string", answer=results(lambda r: [*r[:3], "OK", *r[4:]])),
    Bad("json api", "a result without a status", answer=results(lambda r: [_with(r[0], status=None), *r[1:]])),
    Bad("json api", "a result with status ERROR and the CLI's '%' text",
        answer=results(lambda r: [_with(r[0], status="ERROR", data="",
                                        status_message='% Unrecognized command "version"'), *r[1:]])),
    Bad("json api", "show version's data naming 'Product release' twice",
        answer=lambda c, d: envelope(c, d).replace('"Product release": ', '"Product release": "3.10.4300",\n'
                                                   '                "Product release": ', 1)),
    Bad("show version", "the CLI text instead of JSON", data={"show version": VERSION_TEXT}),
    Bad("show version", "no 'Product release'",
        data={"show version": {k: v for k, v in HEALTHY["show version"].items() if k != "Product release"}}),
    Bad("show running-config", "lines cut before the hostname line",
        data={"show running-config": {"Lines": HEALTHY["show running-config"]["Lines"][:8]}}),
    Bad("show running-config", "'Lines' one string instead of a list",
        data={"show running-config": {"Lines": "\n".join(HEALTHY["show running-config"]["Lines"])}}),
    Bad("show ib sm", "two lines (enable and disable)", data={"show ib sm": {"value": ["enable", "disable"]}}),
    Bad("show ib sm", "an empty answer", data={"show ib sm": ""}),
    Bad("show system profile", "no line at all", data={"show system profile": {"value": []}}),
    Bad("show interfaces ib", "the real Ethernet port table instead of IB ports",
        data={"show interfaces ib": ETHERNET}),
    Bad("show interfaces ib", "a port block without 'Logical port state'",
        data={"show interfaces ib": [{k: v for k, v in PORTS[0].items() if k != "Logical port state"},
                                     *PORTS[1:]]}),
    Bad("show interfaces ib", "cut after 8 of the 16 ports", data={"show interfaces ib": PORTS[:8]}),
    Bad("show ib partition", "a pkey that is not hexadecimal",
        data={"show ib partition": {"Default": [{**HEALTHY["show ib partition"]["Default"][0], "PKey": "0xZZZZ"}]}}),
    Bad("show ib partition", "a list instead of the partition table", data={"show ib partition": []}),
    Bad("show ntp configured", "without its 'NTP enabled' element",
        data={"show ntp configured": HEALTHY["show ntp configured"][1:]}),
    Bad("show ib smnode", "sm-priority not a number", data={SMNODE[0]: {"value": ["high"]}}),
    Bad("show ib smnode", "sm-running an unknown word", data={SMNODE[1]: {"value": ["unknown"]}}),
    Bad("cli", "'| json-print' refused with a '%' error",
        cli=lambda c, out: [f'% Unrecognized command "json-print".\n{PROMPT}']),
    Bad("cli", "show version printed as text (json-print ignored)",
        cli=lambda c, out: [f"{VERSION_TEXT}\n{PROMPT}"]),
    Bad("cli", "running config cut mid-JSON, then the prompt", request_of="show running-config",
        cli=lambda c, out: [f"{cut(out, 'interface ib 1/9')}\n{PROMPT}"]),
    Bad("cli", "the session closed in the middle of the output", request_of="show running-config",
        cli=lambda c, out: [cut(out, "interface ib 1/9"), ""]),
    Bad("cli", "the output stops without a prompt (the switch hangs)", request_of="show running-config",
        cli=lambda c, out: [cut(out, "interface ib 1/9")]),
]


def transport_for(case: Bad) -> Any:
    return cli_for(case) if case.tool == "cli" else api_for(case)


def judge(case: Bad) -> Outcome:
    def call() -> tuple[bool, str]:
        todo = read_and_plan(transport_for(case))
        if todo.problems:
            return True, "; ".join(todo.problems)
        return False, f"{len(todo.commands)} command(s) planned: {todo.commands[:3]}"
    return judge_call(case, call, (client.MlnxosError, fabric.ParseError))


def healthy_passes() -> bool:
    """The declared switch reads as no change through both transports."""
    healthy = Bad("-", "-")
    try:
        return all(not read_and_plan(t).commands and not read_and_plan(t).problems
                   for t in (api_for(healthy), cli_for(healthy)))
    except (client.MlnxosError, fabric.ParseError):
        return False


def run_all() -> list[Outcome]:
    return run_corpus(CASES, judge, healthy_passes)


if __name__ == "__main__":
    sys.exit(print_corpus(run_all(), "the declared switch does not read as no change: the corpus proves nothing"))
