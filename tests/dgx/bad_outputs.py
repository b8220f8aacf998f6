"""Bad device outputs of a DGX A100's readiness probes: nvidia-smi and ibstat as they answer when the driver is
gone, a GPU fell off the bus, the tool was killed, the output was cut or doubled. Each replaces one tool's
answer on an otherwise healthy production node and goes through what the dgx_facts plugin reads from the node
(module_utils/dgx_readiness: read_gpus / read_hcas, then evaluate against the production inventory's
dgx-a100 model). Every one must FAIL a check with a reason; none may pass or crash.

    .venv/bin/python -m tests.dgx.bad_outputs     one line per case, then "N bad outputs, N rejected ..."

Messages quoted from the tools: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA
driver...", "No devices were found", "Unable to determine the device handle for GPU...: Unknown Error" (the
GPU-lost form, with exit status 0 for the GPUs that answered), "Failed to initialize NVML: Driver/library
version mismatch", ibstat's "ibpanic: ... stat of IB device ... failed" and "No IB devices found".
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import ansible.module_utils

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
# the project's module_utils as Ansible ships them (ansible.module_utils.<name>), as tests/conftest.py does;
# never module_utils/ itself on sys.path, where its files would shadow the modules of library/ by name
if str(ROOT / "module_utils") not in ansible.module_utils.__path__:
    ansible.module_utils.__path__.append(str(ROOT / "module_utils"))

import ansible.module_utils.dgx_readiness as dr  # noqa: E402
from dgx_testlib import dgx_hosts, fixture_text, load_group_vars  # noqa: E402

from tests.device_text import ibstat_set, print_corpus, run_corpus  # noqa: E402

PROD = load_group_vars("production", "dgx")
DRIVER = str(PROD["dgx_nvidia_driver_version"])


@dataclass(frozen=True)
class Probe:
    rc: int
    out: str
    err: str = ""


@dataclass(frozen=True)
class Bad:
    tool: str                 # nvidia-smi | ibstat
    what: str
    probe: Callable[[], Probe]


def healthy_smi() -> str:
    return fixture_text("nvidia-smi-8.csv").replace("450.51.06", DRIVER)


def healthy_ibstat() -> str:
    return fixture_text("ibstat-10-dgx-a100.txt")


def expectations() -> dr.Expectations:
    return dr.Expectations.from_inventory(PROD["dgx_models"]["dgx-a100"], DRIVER,
                                          dgx_hosts("production")["dgx01"]["storage_nics"], PROD["dgx_sysctl"])


def facts(smi: Probe, ibstat: Probe) -> dr.DgxFacts:
    gpus, gpu_probe = dr.read_gpus(smi.rc, smi.out, smi.err)
    hcas, hca_probe = dr.read_hcas(ibstat.rc, ibstat.out, ibstat.err)
    return dr.DgxFacts(gpus=gpus, gpu_probe=gpu_probe, hcas=hcas, hca_probe=hca_probe, fabricmanager="active",
                       modules=["mlx5_core", "nvidia", "nv_peer_mem"], nic_mtu={"enp225s0f0": 9000},
                       sysctl={k: str(v) for k, v in PROD["dgx_sysctl"].items()})


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _ibstat_field(ca: str, field: str, value: str) -> str:
    return ibstat_set(healthy_ibstat(), ca, field, value)


SMI_FAILED = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the "
              "latest NVIDIA driver is installed and running.\n")
CASES: list[Bad] = [
    Bad("nvidia-smi", "driver not loaded (exit 9)", lambda: Probe(9, SMI_FAILED)),
    Bad("nvidia-smi", "driver message with exit status 0", lambda: Probe(0, SMI_FAILED)),
    Bad("nvidia-smi", "No devices were found (exit 6)", lambda: Probe(6, "No devices were found\n")),
    Bad("nvidia-smi", "NVML driver/library version mismatch (exit 18)",
        lambda: Probe(18, "Failed to initialize NVML: Driver/library version mismatch\n")),
    Bad("nvidia-smi", "a GPU lost: its line is the error, the others answer",
        lambda: Probe(0, "".join(_lines(healthy_smi())[:3])
                      + "Unable to determine the device handle for GPU0000:47:00.0: Unknown Error\n"
                      + "".join(_lines(healthy_smi())[4:]))),
    Bad("nvidia-smi", "a GPU lost: it is simply missing", lambda: Probe(0, "".join(_lines(healthy_smi())[:7]))),
    Bad("nvidia-smi", "output cut in the middle of the last row",
        lambda: Probe(0, healthy_smi()[:healthy_smi().rindex(DRIVER) + 4])),
    Bad("nvidia-smi", "killed by the probe's timeout (exit 124) after 3 rows",
        lambda: Probe(124, "".join(_lines(healthy_smi())[:3]))),
    Bad("nvidia-smi", "crashed (exit 139), nothing printed", lambda: Probe(139, "")),
    Bad("nvidia-smi", "empty output with exit status 0", lambda: Probe(0, "")),
    Bad("nvidia-smi", "CSV with its header line (format=csv without noheader)",
        lambda: Probe(0, "index, name, driver_version, pci.bus_id, uuid\n" + healthy_smi())),
    Bad("nvidia-smi", "two queries' outputs concatenated (16 rows)", lambda: Probe(0, healthy_smi() * 2)),
    Bad("nvidia-smi", "a GPU whose fields read ERR!",
        lambda: Probe(0, healthy_smi().replace("5, NVIDIA A100-SXM4-40GB, " + DRIVER, "5, ERR!, ERR!"))),
    Bad("nvidia-smi", "driver column [N/A]", lambda: Probe(0, healthy_smi().replace(DRIVER, "[N/A]"))),
    Bad("nvidia-smi", "binary garbage", lambda: Probe(0, "\x00\x01\x7f\ufffd garbage\n" * 8)),
    Bad("ibstat", "ibpanic: no umad device (exit 1)",
        lambda: Probe(1, "", "ibpanic: [4127] main: stat of IB device 'mlx5_0' failed: No such file or directory\n")),
    Bad("ibstat", "No IB devices found (exit 255)", lambda: Probe(255, "", "No IB devices found\n")),
    Bad("ibstat", "empty output with exit status 0", lambda: Probe(0, "")),
    Bad("ibstat", "cut off after half the adapters",
        lambda: Probe(0, healthy_ibstat()[:healthy_ibstat().index("CA 'mlx5_5'")])),
    Bad("ibstat", "cut off inside a compute port block (no State line)",
        lambda: Probe(0, healthy_ibstat()[:healthy_ibstat().index("State", healthy_ibstat().index("CA 'mlx5_9'"))])),
    Bad("ibstat", "printed twice (concatenated)", lambda: Probe(0, healthy_ibstat() * 2)),
    Bad("ibstat", "a compute port Down", lambda: Probe(0, _ibstat_field("mlx5_2", "State", "Down"))),
    Bad("ibstat", "a compute port Initializing (no subnet manager)",
        lambda: Probe(0, _ibstat_field("mlx5_8", "State", "Initializing"))),
    Bad("ibstat", "a compute port at HDR100", lambda: Probe(0, _ibstat_field("mlx5_1", "Rate", "100"))),
    Bad("ibstat", "a rate that is not a number", lambda: Probe(0, _ibstat_field("mlx5_3", "Rate", "unknown"))),
    Bad("ibstat", "killed by the probe's timeout (exit 124)",
        lambda: Probe(124, healthy_ibstat()[:len(healthy_ibstat()) // 2])),
    Bad("ibstat", "ibv_devinfo's output instead of ibstat's",
        lambda: Probe(0, "hca_id:\tmlx5_0\n\ttransport:\t\t\tInfiniBand (0)\n\tfw_ver:\t\t\t\t20.28.1002\n")),
    Bad("ibstat", "binary garbage", lambda: Probe(0, "\x00\x01\x7f\ufffd garbage\n" * 8)),
]


@dataclass
class Outcome:
    case: Bad
    problem: str | None       # None: rejected as it must be
    reason: str = ""


def judge(case: Bad) -> Outcome:
    smi, ib = Probe(0, healthy_smi()), Probe(0, healthy_ibstat())
    try:
        bad = case.probe()
        checks = dr.evaluate(facts(bad if case.tool == "nvidia-smi" else smi, bad if case.tool == "ibstat" else ib),
                             expectations())
    except Exception as exc:  # the point of the corpus: nothing may crash the readiness evaluation
        return Outcome(case, f"crashed: {type(exc).__name__}: {exc}")
    failed = dr.failures(checks)
    if not failed:
        return Outcome(case, "PASSED")
    wrong_tool = [c.name for c in failed if not c.name.startswith(("gpu", "driver") if case.tool == "nvidia-smi"
                                                                  else ("hca",))]
    if wrong_tool:
        return Outcome(case, f"checks of the other probe failed: {wrong_tool}")
    reasons = "; ".join(f"{c.name}: expected {c.expected}, got {c.actual}" + (f" ({c.detail})" if c.detail else "")
                        for c in failed)
    return Outcome(case, None, reasons)


def healthy_passes() -> bool:
    return not dr.failures(dr.evaluate(facts(Probe(0, healthy_smi()), Probe(0, healthy_ibstat())), expectations()))


def run_all() -> list[Outcome]:
    return run_corpus(CASES, judge, healthy_passes)


if __name__ == "__main__":
    sys.exit(print_corpus(run_all(), "the healthy node does not pass: the corpus proves nothing"))
