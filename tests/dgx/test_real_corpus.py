"""The DGX-side parsers and readiness on real outputs (tests/fixtures/dgx/real/, sources in SOURCES there).

No public capture of a DGX A100's full ibstat was found; the real 12-adapter capture here is of an 8-GPU
NVSwitch node of the same shape one generation on (8 single-port compute adapters on InfiniBand, the storage
ConnectX-6 Dx among them on Ethernet, names interleaved): what the compute-HCA logic has to get right."""

from __future__ import annotations

import pytest
from ansible.module_utils.dgx_readiness import (
    FAIL,
    PASS,
    DgxFacts,
    Expectations,
    ToolResult,
    evaluate,
    parse_ibstat,
)
from dgx_testlib import ROOT

from validation.parse_sysinfo import ib_port_problems, parse_topo
from validation.parse_sysinfo import parse_ibstat as parse_ibstat_ports

REAL = ROOT / "tests" / "fixtures" / "dgx" / "real"
IBSTAT_12 = (REAL / "ibstat-12-hca-mooncake-2039.txt").read_text()
TOPO_12 = (REAL / "topo-m-12-nic-mooncake-2039.txt").read_text()
COMPUTE = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"]
STORAGE = ["mlx5_1", "mlx5_2", "mlx5_7", "mlx5_8"]
MODEL = {"gpus": 8, "gpu_model": "", "hcas": 8, "hca_rate_gbps": 400, "nvswitch": True, "compute_hcas": COMPUTE}


def test_every_real_file_has_a_source():
    sources = (REAL / "SOURCES").read_text()
    for path in REAL.iterdir():
        if path.name not in ("SOURCES",):
            assert path.name in sources, f"{path.name} has no entry in SOURCES"


def test_ibstat_twelve_adapters_parse():
    hcas = parse_ibstat(IBSTAT_12)
    assert [h.name for h in hcas] == ["mlx5_0", "mlx5_1", "mlx5_10", "mlx5_11", *[f"mlx5_{i}" for i in range(2, 10)]]
    by = {h.name: h for h in hcas}
    assert all(by[n].ports[0].link_layer == "InfiniBand" and by[n].ports[0].rate_gbps == 400 for n in COMPUTE)
    assert all(by[n].ports[0].link_layer == "Ethernet" and by[n].ca_type == "MT4125" for n in STORAGE)
    assert by["mlx5_1"].ports[0].state == "Down" and by["mlx5_7"].ports[0].rate_gbps == 100


def facts(text: str = IBSTAT_12) -> DgxFacts:
    return DgxFacts(hcas=parse_ibstat(text), hca_probe=ToolResult(present=True))


def hca_checks(f: DgxFacts, model: dict) -> dict:
    want = Expectations.from_inventory(model, "", [], {})
    return {c.name: c for c in evaluate(f, want) if c.name.startswith("hca_")}


def test_readiness_counts_only_the_named_compute_adapters():
    checks = hca_checks(facts(), MODEL)
    assert {c.status for c in checks.values()} == {PASS}, checks
    # without names, the InfiniBand adapters are the compute ones: right here, where the storage cards run
    # Ethernet, and the check says it guessed
    unnamed = hca_checks(facts(), {**MODEL, "compute_hcas": None})
    assert unnamed["hca_count"].status == PASS and "not named" in unnamed["hca_count"].detail


def test_readiness_fails_naming_a_down_compute_port():
    down = IBSTAT_12.replace("Base lid: 284", "Base lid: 284").replace(
        "Node GUID: 0x58a2e103001a691e\n        System image GUID: 0x58a2e103001a691e\n        Port 1:\n"
        "                State: Active\n                Physical state: LinkUp",
        "Node GUID: 0x58a2e103001a691e\n        System image GUID: 0x58a2e103001a691e\n        Port 1:\n"
        "                State: Down\n                Physical state: Polling")
    assert down != IBSTAT_12
    checks = hca_checks(facts(down), MODEL)
    failed = [c for c in checks.values() if c.status == FAIL]
    assert failed and any("mlx5_10" in f"{c.actual} {c.detail}" for c in failed), checks


def test_a_storage_adapter_named_as_compute_fails():
    wrong = [*COMPUTE[:-1], "mlx5_7"]
    checks = hca_checks(facts(), {**MODEL, "compute_hcas": wrong})
    assert any(c.status == FAIL and "mlx5_7" in f"{c.actual} {c.detail}" for c in checks.values()), checks


def test_verdict_side_ibstat_and_topology():
    ports = parse_ibstat_ports(IBSTAT_12)
    assert ib_port_problems(ports, 8, 400, COMPUTE) == []
    assert ib_port_problems(ports, 8, 400, [*COMPUTE[:-1], "mlx5_7"])
    topo = parse_topo(TOPO_12)
    assert topo.gpus == [f"GPU{i}" for i in range(8)] and topo.nvlink_all_pairs()
    assert topo.nics["NIC10"] == "mlx5_10" and topo.links["GPU0"]["mlx5_0"] == "PIX"
    assert topo.cpu_affinity["GPU4"] == "1,3,5,7,9,11" and topo.numa_affinity["GPU4"] == "1"
    # every compute adapter sits next to a GPU (PIX); on this node some storage ports do too
    assert set(COMPUTE) <= {n for g in topo.gpus for n in topo.nearest_nics(g)}


@pytest.mark.parametrize("sep", ["\t", "    "])
def test_topology_with_tabs_or_pasted_spaces(sep):
    text = sep.join(["", "GPU0", "GPU1", "mlx5_0", "CPU Affinity"]) + "\n" + "\n".join(
        sep.join(row) for row in (["GPU0", " X ", "NV12", "PXB", "0-63"], ["GPU1", "NV12", " X ", "PXB", "0-63"],
                                  ["mlx5_0", "PXB", "PXB", " X "])) + "\n\nLegend:\n"
    topo = parse_topo(text)
    assert topo.nvlink_all_pairs() and topo.links["GPU1"]["mlx5_0"] == "PXB"


def test_topology_as_nvidia_smi_writes_it_with_the_header_underlined():
    """nvidia-smi 580.159.04 underlines the header with terminal escapes even into a file (captured on an H100
    lent to this project, SOURCES): the parser read no header in it, so a real node's sysinfo check failed."""
    raw = (REAL / "topo-m-1-h100-driver-580-ansi.txt").read_text()
    assert "\x1b[4m" in raw.splitlines()[0]
    topo = parse_topo(raw)
    assert topo.gpus == ["GPU0"] and topo.nics == {} and topo.links["GPU0"] == {}
    assert topo.cpu_affinity["GPU0"] == "0-15" and topo.numa_affinity["GPU0"] == "0"
