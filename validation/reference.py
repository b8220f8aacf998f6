"""The reference's published figures, for the report's "reference" column.

Copied from ../shared/reference/reference-architecture.yaml (which cites the whitepapers under
../shared/seeds/ and public material); the report must not depend on that file being present at a site.
These are comparisons for the reader, not thresholds: thresholds live in group_vars acceptance.yml.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Figure:
    text: str
    value: float | None
    unit: str
    source: str


def reference_for(metric: str, node_count: int) -> Figure | None:
    """The published figure closest to what this metric measures, or None."""
    if metric == "nccl_single_node_busbw_gbps":
        return Figure("~230 GB/s (typical DGX A100, 8 GPUs on NVSwitch); 228 floor used by Azure NHC", 230.0,
                      "GB/s", "public_expectations.nccl_allreduce_busbw_GBps.dgx_a100_single_node")
    if metric in ("nccl_multi_node_busbw_gbps", "nccl_pair_busbw_gbps"):
        if metric == "nccl_pair_busbw_gbps" or node_count <= 2:
            return Figure("188.53 GB/s (DeepOps, 2 DGX A100, 8x HDR, 4 GB messages)", 188.53, "GB/s",
                          "public_expectations...dgx_a100_multi_node_8x_hdr.deepops_docs_2_nodes_at_4GB")
        return Figure("191.05 GB/s (DeepOps, 4 DGX A100, 8x HDR, 4 GB messages)", 191.05, "GB/s",
                      "public_expectations...dgx_a100_multi_node_8x_hdr.deepops_docs_4_nodes_at_4GB")
    if metric == "fio_node_read_MBps":
        return Figure("4959 MB/s (one DGX A100, one F800 40 GbE link saturated)", 4959.0, "MB/s",
                      "published_results.fio_004.single_dgx_read_MBps")
    if metric == "fio_aggregate_read_MBps":
        return Figure("18924 MB/s (four DGX A100, limit of four F800 nodes); scaling linear", 18924.0, "MB/s",
                      "published_results.fio_004.four_dgx_read_MBps")
    if metric == "ddp_scaling_efficiency":
        return Figure("linear from 8 to 32 GPUs (MLPerf 0.7 ResNet-50, MXNet)", 1.0, "ratio",
                      "published_results.mlperf_resnet50_004.scaling")
    if metric == "ddp_real_over_synthetic":
        return Figure("epoch 0 vs overall: difference minor, storage not a bottleneck", None, "ratio",
                      "published_results.mlperf_resnet50_004.epoch0_vs_overall")
    if metric == "ddp_synthetic_throughput":
        return Figure("16621 img/s per DGX A100 (ResNet-50 PyTorch AMP, 8 GPUs, NVIDIA DeepLearningExamples)",
                      16621.0, "img/s", "public_expectations.resnet50_pytorch_dgx_a100_img_s.amp.8_gpus")
    return None
