"""The site a validation run is judged against, typed: nodes, DGX models, storage links, stage settings and the
acceptance data, read once from the context (validation/context.py: a run's context.json) by ``Site.from_context``.

Every stage judge (validation/stages/), the thresholds (validation/thresholds.py) and the report read this Site,
never the context dict: one home for every context key the verdict uses. A key of the wrong type is a ``SiteError``
naming the key and its value. A key that is absent or empty means what it always meant (no nodes, a stage disabled,
the default). What the run itself measures and later stages judge against (the path baselines, the host's scaling)
is a ``Measured`` value the verdict puts into the Site with ``dataclasses.replace`` as it judges.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

Number = int | float


class SiteError(ValueError):
    """A context key of the wrong type; the message names the key, its value and the fix."""


def _fail(key: str, value: Any, want: str) -> SiteError:
    return SiteError(f"context {key}={value!r}: not {want} (fix: the inventory variable {key.split('.')[0].split('[')[0]}"
                     f" or the run's context.json)")


def _frozen(mapping: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping))


def _mapping(key: str, value: Any) -> Mapping[str, Any]:
    """A mapping; absent, null or empty is {} (as the verdict always read it)."""
    if not value:
        return _frozen({})
    if not isinstance(value, Mapping):
        raise _fail(key, value, "a mapping")
    return value


def _list(key: str, value: Any) -> list[Any]:
    if not value:
        return []
    if not isinstance(value, (list, tuple)):
        raise _fail(key, value, "a list")
    return list(value)


def _str(key: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _fail(key, value, "a string")
    return value


def _names(key: str, value: Any) -> tuple[str, ...]:
    items = _list(key, value)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise _fail(f"{key}[{i}]", item, "a name (string)")
    return tuple(items)


def _flag(key: str, value: Any) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _fail(key, value, "true or false")
    return value


def _number(key: str, value: Any) -> Number | None:
    """A number as given (an int stays an int: the report prints it); a numeric string (``-e key=value`` gives
    strings) as its number; absent, null or empty is None."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise _fail(key, value, "a number")
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                return float(value)
            except ValueError:
                raise _fail(key, value, "a number") from None
    return value


@dataclass(frozen=True)
class Nic:
    """A storage NIC of a DGX or a PowerScale node (hosts.yml storage_nics): what the ceilings need of it."""

    name: str | None
    speed_gbps: Number | None

    @classmethod
    def from_entry(cls, key: str, entry: Any) -> Nic:
        if not isinstance(entry, Mapping):
            raise _fail(key, entry, "a NIC (a mapping with name and speed_gbps)")
        return cls(name=_str(f"{key}.name", entry.get("name")),
                   speed_gbps=_number(f"{key}.speed_gbps", entry.get("speed_gbps")))


def _nics(key: str, value: Any) -> tuple[Nic, ...]:
    return tuple(Nic.from_entry(f"{key}[{i}]", e) for i, e in enumerate(_list(key, value)))


@dataclass(frozen=True)
class DgxModel:
    """One dgx_models entry. Every figure is None where the entry does not give it (an unknown model: all None)."""

    gpus: Number | None = None
    hcas: Number | None = None
    hca_rate_gbps: Number | None = None
    nvswitch: bool = False
    nvlink_gbps_per_gpu: Number | None = None
    compute_hcas: tuple[str, ...] = ()

    @classmethod
    def from_entry(cls, key: str, entry: Any) -> DgxModel:
        e = _mapping(key, entry)
        return cls(gpus=_number(f"{key}.gpus", e.get("gpus")), hcas=_number(f"{key}.hcas", e.get("hcas")),
                   hca_rate_gbps=_number(f"{key}.hca_rate_gbps", e.get("hca_rate_gbps")),
                   nvswitch=_flag(f"{key}.nvswitch", e.get("nvswitch")),
                   nvlink_gbps_per_gpu=_number(f"{key}.nvlink_gbps_per_gpu", e.get("nvlink_gbps_per_gpu")),
                   compute_hcas=tuple(str(h) for h in _list(f"{key}.compute_hcas", e.get("compute_hcas"))))


@dataclass(frozen=True)
class DgxNode:
    """A DGX of the run (context.json dgx): its dgx_model name and its storage NICs."""

    model: str | None
    storage_nics: tuple[Nic, ...] = ()


@dataclass(frozen=True)
class PowerScaleNode:
    """A PowerScale node (context.json powerscale): its storage NICs, in inventory order."""

    storage_nics: tuple[Nic, ...] = ()


@dataclass(frozen=True)
class ServerMapEntry:
    """An nfs_server_map entry: the PowerScale node and NIC a DGX mounts through (nfs_server_mode static)."""

    node: str | None
    nic: str | None


@dataclass(frozen=True)
class Storage:
    """How the DGX nodes reach the PowerScale: what the storage ceilings are derived from."""

    mode: str | None = None                                       # nfs_server_mode
    server_map: Mapping[str, ServerMapEntry] = field(default_factory=lambda: _frozen({}))
    smartconnect_interfaces: frozenset[str] = frozenset()       # powerscale_smartconnect.interfaces
    powerscale: Mapping[str, PowerScaleNode] = field(default_factory=lambda: _frozen({}))


@dataclass(frozen=True)
class HostScaling:
    """validation_ddp.host_scaling: the training without DDP on every node at once, and the speedup it must show."""

    enabled: bool = False
    min_speedup: float = 1.0


@dataclass(frozen=True)
class StageSettings:
    """The stage settings the judges read (validation_nccl, validation_ddp, validation_telemetry); ``procs_per_node``
    None is "auto" (the GPUs of the node's model)."""

    nccl_procs_per_node: int | None = None
    nccl_judge_min_bytes: int = 0
    ddp_procs_per_node: int | None = None
    ddp_image_size: int = 0
    ddp_runtime: str | None = None
    host_scaling: HostScaling = HostScaling()
    telemetry_enabled: bool = False
    telemetry_max_gap: float = 0.25

    def procs_per_node(self, stage: str) -> int | None:
        return self.ddp_procs_per_node if stage == "ddp" else self.nccl_procs_per_node


@dataclass(frozen=True)
class Acceptance:
    """What the run is accepted against: the thresholds, the outlier rule and an earlier run as baseline.

    ``thresholds`` stay the entries as given: each is checked (thresholds.check_entry) when its metric is judged,
    so a malformed entry is that metric's FAIL with its reason, never a crash of the whole verdict."""

    thresholds: tuple[Mapping[str, Any], ...] = ()
    outlier_max_behind_pct: float = 5.0
    baseline_path: str = ""          # acceptance_baseline.path as given (load_baseline strips it)
    max_regression_pct: float = 10.0

    def metrics(self) -> set[str]:
        return {str(e.get("metric")) for e in self.thresholds}


@dataclass(frozen=True)
class Measured:
    """Baselines measured in this run, which later stages' thresholds are fractions of ("measured" entries).

    ``judged``: a stage that measures baselines (paths, or the DDP host scaling) has been judged; before that a
    "measured" threshold has nothing to compare with."""

    judged: bool = False
    storage: Mapping[str, float] = field(default_factory=lambda: _frozen({}))    # path_storage_MBps per node
    storage_aggregate: float | None = None                                         # path_storage_aggregate_MBps
    fabric: Mapping[str, float] = field(default_factory=lambda: _frozen({}))     # path_fabric_GBps per pair a+b
    host_scaling: float | None = None                  # the host's own efficiency, every node without DDP


def _repeats(value: Any) -> int | None:
    """validation_repeats, or None when it is not a positive number (a run judged without a repeat count)."""
    try:
        n = int(value or 0)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


def _procs(key: str, value: Any) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if value is None or value == "auto":
        return None
    raise _fail(key, value, "a number of processes or 'auto'")


@dataclass(frozen=True)
class Site:
    """The site of one validation run, as the verdict judges it. Build it with ``Site.from_context``."""

    name: str | None
    nodes: tuple[str, ...]
    lab: bool                                          # validation_lab_standins
    enabled_stages: frozenset[str]                     # validation_stages.<stage>.enabled
    repeats: int | None                                # validation_repeats
    ib_rate_gbps: Number | None
    models: Mapping[str, DgxModel]                     # dgx_models
    dgx: Mapping[str, DgxNode]                         # the run's DGX nodes (context.json dgx)
    storage: Storage
    settings: StageSettings
    acceptance: Acceptance
    scale_before: str                                  # validate_scale_before: the earlier run of a scale-out
    # Free-form: the stage settings as given (validation_nccl, validation_fio, ...). Which keys a launch must have
    # asked as the site configured them is data (validation/asked.yml, each row's site key), not code.
    stage_settings: Mapping[str, Mapping[str, Any]]
    # The context as given. Only the report reads it, to echo the site, its nodes and the acceptance data exactly
    # as configured (an -e key=value string stays a string, a missing key stays null); no judge reads it.
    raw: Mapping[str, Any]
    measured: Measured = Measured()

    @classmethod
    def of(cls, site_or_ctx: Site | Mapping[str, Any]) -> Site:
        """The Site itself, or the Site of a context mapping (the public entry points accept either)."""
        return site_or_ctx if isinstance(site_or_ctx, Site) else cls.from_context(site_or_ctx)

    @classmethod
    def from_context(cls, ctx: Mapping[str, Any]) -> Site:
        """Read every key the verdict uses from a context mapping (validation.context). Pure."""
        if not isinstance(ctx, Mapping):
            raise SiteError(f"the context is {type(ctx).__name__}, not a mapping of its keys (context.json)")
        stages = _mapping("validation_stages", ctx.get("validation_stages"))
        enabled = frozenset(s for s, cfg in stages.items()
                            if _flag(f"validation_stages.{s}.enabled",
                                     _mapping(f"validation_stages.{s}", cfg).get("enabled", False)))
        models = {str(k): DgxModel.from_entry(f"dgx_models.{k}", v)
                  for k, v in _mapping("dgx_models", ctx.get("dgx_models")).items()}
        dgx = {}
        for node, hv in _mapping("dgx", ctx.get("dgx")).items():
            hv = _mapping(f"dgx.{node}", hv)
            dgx[str(node)] = DgxNode(model=_str(f"dgx.{node}.dgx_model", hv.get("dgx_model")),
                                     storage_nics=_nics(f"dgx.{node}.storage_nics", hv.get("storage_nics")))
        settings = {k: _mapping(k, ctx.get(k)) for k in ("validation_nccl", "validation_fio", "validation_ddp",
                                                         "validation_paths", "validation_telemetry")}
        return cls(
            name=_str("site", ctx.get("site")),
            nodes=_names("nodes", ctx.get("nodes")),
            lab=_flag("validation_lab_standins", ctx.get("validation_lab_standins")),
            enabled_stages=enabled,
            repeats=_repeats(ctx.get("validation_repeats")),
            ib_rate_gbps=_number("ib_rate_gbps", ctx.get("ib_rate_gbps")),
            models=_frozen(models),
            dgx=_frozen(dgx),
            storage=_storage(ctx),
            settings=_stage_settings(settings),
            acceptance=_acceptance(ctx),
            scale_before=str(_str("validate_scale_before", ctx.get("validate_scale_before") or None) or "").strip(),
            stage_settings=_frozen({k: _frozen(v) for k, v in settings.items()}),
            raw=_frozen(ctx),
        )

    def enabled(self, stage: str) -> bool:
        return stage in self.enabled_stages

    def model_of(self, node: str) -> DgxModel:
        """The dgx_models entry of the node's dgx_model; an empty DgxModel when it names none or an unknown one."""
        hv = self.dgx.get(node)
        name = hv.model if hv is not None else None
        return (self.models.get(name) if name is not None else None) or DgxModel()

    def ranks_per_node(self, node: str, stage: str = "nccl") -> int | None:
        """Ranks each node contributes: validation_<stage>.procs_per_node, or (auto) the GPUs of its dgx_model."""
        setting = self.settings.procs_per_node(stage)
        if setting is not None:
            return setting
        return int(self.model_of(node).gpus or 0) or None


def _storage(ctx: Mapping[str, Any]) -> Storage:
    server_map = {}
    for dgx, entry in _mapping("nfs_server_map", ctx.get("nfs_server_map")).items():
        if not entry:
            continue  # an empty entry is no entry (the ceilings name the missing one)
        e = _mapping(f"nfs_server_map.{dgx}", entry)
        server_map[str(dgx)] = ServerMapEntry(node=_str(f"nfs_server_map.{dgx}.node", e.get("node")),
                                              nic=_str(f"nfs_server_map.{dgx}.nic", e.get("nic")))
    smartconnect = _mapping("powerscale_smartconnect", ctx.get("powerscale_smartconnect"))
    powerscale = {}
    for node, hv in _mapping("powerscale", ctx.get("powerscale")).items():
        hv = _mapping(f"powerscale.{node}", hv)
        powerscale[str(node)] = PowerScaleNode(_nics(f"powerscale.{node}.storage_nics", hv.get("storage_nics")))
    return Storage(mode=_str("nfs_server_mode", ctx.get("nfs_server_mode")), server_map=_frozen(server_map),
                   smartconnect_interfaces=frozenset(_names("powerscale_smartconnect.interfaces",
                                                            smartconnect.get("interfaces"))),
                   powerscale=_frozen(powerscale))


def _stage_settings(settings: Mapping[str, Mapping[str, Any]]) -> StageSettings:
    nccl, ddp, telemetry = settings["validation_nccl"], settings["validation_ddp"], settings["validation_telemetry"]
    host = _mapping("validation_ddp.host_scaling", ddp.get("host_scaling"))
    min_bytes = _number("validation_nccl.judge_min_bytes", nccl.get("judge_min_bytes", 0))
    if min_bytes is None:
        raise _fail("validation_nccl.judge_min_bytes", nccl.get("judge_min_bytes"), "a number of bytes")
    return StageSettings(
        nccl_procs_per_node=_procs("validation_nccl.procs_per_node", nccl.get("procs_per_node", "auto")),
        nccl_judge_min_bytes=int(min_bytes),
        ddp_procs_per_node=_procs("validation_ddp.procs_per_node", ddp.get("procs_per_node", "auto")),
        ddp_image_size=int(_number("validation_ddp.image_size", ddp.get("image_size")) or 0),
        ddp_runtime=_str("validation_ddp.runtime", ddp.get("runtime")),
        host_scaling=HostScaling(
            enabled=_flag("validation_ddp.host_scaling.enabled", host.get("enabled")),
            min_speedup=float(_number("validation_ddp.host_scaling.min_speedup", host.get("min_speedup")) or 1.0)),
        telemetry_enabled=_flag("validation_telemetry.enabled", telemetry.get("enabled")),
        telemetry_max_gap=float(_number("validation_telemetry.max_gap", telemetry.get("max_gap")) or 0.25),
    )


def _acceptance(ctx: Mapping[str, Any]) -> Acceptance:
    entries = _list("acceptance_thresholds", ctx.get("acceptance_thresholds"))
    for i, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise _fail(f"acceptance_thresholds[{i}]", entry, "a threshold entry (a mapping)")
    baseline = _mapping("acceptance_baseline", ctx.get("acceptance_baseline"))
    regression = _number("acceptance_baseline.max_regression_pct", baseline.get("max_regression_pct", 10))
    if regression is None:
        raise _fail("acceptance_baseline.max_regression_pct", baseline.get("max_regression_pct"), "a percentage")
    outlier = ctx.get("acceptance_outlier_max_behind_pct")  # given (an -e string "0" too) or the default 5
    return Acceptance(
        thresholds=tuple(entries),
        outlier_max_behind_pct=float(_number("acceptance_outlier_max_behind_pct", outlier) or 0) if outlier else 5.0,
        baseline_path=_str("acceptance_baseline.path", baseline.get("path")) or "",
        max_regression_pct=float(regression),
    )
