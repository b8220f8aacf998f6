"""The typed site the verdict judges against (validation/site.py): read once from the production and the lab
contexts, a wrong type named with its key and value, and immutable."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from validation.site import DgxModel, Measured, Nic, Site, SiteError


def test_production_context(production_ctx):
    site = Site.from_context(production_ctx)
    assert site.name == "production" and site.nodes == ("dgx01", "dgx02", "dgx03", "dgx04") and not site.lab
    assert site.enabled_stages == {"paths", "nccl", "fio", "ddp"} and site.repeats == 5
    assert site.model_of("dgx01") == DgxModel(gpus=8, hcas=8, hca_rate_gbps=200, nvswitch=True,
                                              compute_hcas=("mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_6",
                                                            "mlx5_7", "mlx5_8", "mlx5_9"))
    assert site.model_of("no-such-node") == DgxModel()
    assert site.ranks_per_node("dgx01") == 8 and site.ranks_per_node("dgx01", "ddp") == 8
    assert site.dgx["dgx01"].storage_nics[0] == Nic(name="enp225s0f0", speed_gbps=100)
    assert site.storage.mode == "static" and site.storage.server_map["dgx01"].node == "f800-1"
    assert site.storage.smartconnect_interfaces == {"40gige-1", "40gige-2"}
    assert site.settings.nccl_judge_min_bytes == 1073741824 and site.settings.ddp_image_size == 224
    assert site.settings.telemetry_enabled and site.settings.telemetry_max_gap == 0.1
    assert not site.settings.host_scaling.enabled
    assert site.acceptance.outlier_max_behind_pct == 5.0 and site.acceptance.baseline_path == ""
    assert "fio_node_read_MBps" in site.acceptance.metrics()
    assert site.stage_settings["validation_fio"]["runtime_s"] == 60
    assert site.measured == Measured() and not site.measured.judged


def test_lab_context(lab_ctx):
    site = Site.from_context(lab_ctx)
    assert site.lab and site.settings.host_scaling.enabled and site.settings.host_scaling.min_speedup == 1.2
    assert site.ranks_per_node(site.nodes[0]) == 2 and site.ranks_per_node(site.nodes[0], "ddp") == 1
    assert site.settings.ddp_runtime == "host" and site.settings.telemetry_max_gap == 0.35


def test_of_takes_a_site_or_a_context(production_ctx):
    site = Site.from_context(production_ctx)
    assert Site.of(site) is site and Site.of(production_ctx) == site


def test_an_ansible_extra_var_string_is_its_number(production_ctx):
    ctx = dict(production_ctx, acceptance_outlier_max_behind_pct="7", validation_repeats="2", ib_rate_gbps="100")
    site = Site.from_context(ctx)
    assert site.acceptance.outlier_max_behind_pct == 7.0 and site.repeats == 2 and site.ib_rate_gbps == 100
    assert site.raw["acceptance_outlier_max_behind_pct"] == "7"  # the report echoes it as given


def test_absent_keys_mean_what_they_always_meant():
    site = Site.from_context({})
    assert site.nodes == () and not site.enabled("nccl") and site.repeats is None
    assert site.acceptance.outlier_max_behind_pct == 5.0 and site.settings.nccl_judge_min_bytes == 0


@pytest.mark.parametrize(("key", "value", "named"), [
    ("validation_stages", ["nccl"], "validation_stages=['nccl']"),
    ("validation_lab_standins", "false", "validation_lab_standins='false'"),
    ("nodes", ["dgx01", 2], "nodes[1]=2"),
    ("acceptance_outlier_max_behind_pct", "five", "acceptance_outlier_max_behind_pct='five'"),
    ("dgx_models", {"dgx-a100": {"gpus": "eight"}}, "dgx_models.dgx-a100.gpus='eight'"),
    ("validation_nccl", {"procs_per_node": 2.5}, "validation_nccl.procs_per_node=2.5"),
    ("acceptance_thresholds", ["fio"], "acceptance_thresholds[0]='fio'"),
])
def test_a_wrong_type_names_the_key_and_the_value(production_ctx, key, value, named):
    ctx = copy.deepcopy(production_ctx)
    ctx[key] = value
    with pytest.raises(SiteError) as exc:
        Site.from_context(ctx)
    assert named in str(exc.value) and "fix:" in str(exc.value)


def test_a_nested_wrong_type_names_the_host(production_ctx):
    ctx = copy.deepcopy(production_ctx)
    ctx["dgx"]["dgx02"]["storage_nics"][0]["speed_gbps"] = "fast"
    with pytest.raises(SiteError, match=r"dgx\.dgx02\.storage_nics\[0\]\.speed_gbps='fast'"):
        Site.from_context(ctx)


def test_the_site_is_immutable(production_ctx):
    site = Site.from_context(production_ctx)
    with pytest.raises(dataclasses.FrozenInstanceError):
        site.nodes = ("dgx09",)  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        site.settings.ddp_image_size = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        site.dgx["dgx09"] = site.dgx["dgx01"]  # type: ignore[index]
    with pytest.raises(TypeError):
        site.raw["nodes"] = []  # type: ignore[index]
    measured = dataclasses.replace(site, measured=Measured(judged=True, host_scaling=0.9))
    assert measured.measured.host_scaling == 0.9 and site.measured == Measured()  # a new Site, the old one as it was


def test_the_context_mapping_is_not_changed(production_ctx):
    before = copy.deepcopy(production_ctx)
    Site.from_context(production_ctx)
    assert production_ctx == before
