"""A trial, typed: the one place where a grid's setting is checked and read by its keys.

A figure's grid (spec.Figure.grid) is a list of settings, each one flat
mapping of the keys its parts take (netrepro.studykit.params declares them:
the path's, the hosts', a variant's, the workload's).  Here a setting is
checked (`problems`, `check_grid`: a key no part takes, a value not allowed)
and, once, made a `Trial`: its path parsed (`PathSpec`), the hosts' TCP
settings (`Hosts`), its congestion control resolved with its tuning
(`CongestionControl`), its topology, its series and level, and its
workload's parameters as that workload's own dataclass (`workload_keys`:
fields declared with `key(...)`, one declaration per key, one default).

Below this module nothing reads a trial's parameter by its name.  The
setting is kept whole in `Trial.setting` for what is made of all of it at
once: the trial key (its serialisation) and a row's parameter columns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ground.errors import UserError
from ground.path import PathSpec
from ground.trials import trial_key
from ground.units import QuantityError
from kmod import loader
from netrepro.studykit.params import HOST_PARAMS, PATH_KEYS, TOPOLOGY_KEYS, Key
from topologies.topology import Topology

W = TypeVar("W")

# -- the check -------------------------------------------------------------------------


def problems(setting: Mapping[str, Any], keys: Mapping[str, Key]) -> list[str]:
    """What is wrong with one trial's setting: unknown keys, bad values, a variant's key without it."""
    out = []
    for name, value in setting.items():
        declared = keys.get(name)
        if declared is None:
            out.append(f"{name!r} is not a key any part of a trial takes; the keys are {', '.join(sorted(keys))}")
            continue
        why = declared.problem(value)
        if why:
            out.append(f"{name}={value!r}: {why}")
    cc = setting.get("cc")
    for name in setting:
        owners = [v.name for v in loader.ALGORITHMS.values() if any(p.name == name for p in v.params)]
        if owners and cc not in owners:
            out.append(f"{name} is a parameter of {' and '.join(owners)}, and the trial's cc is {cc!r}")
    variant = loader.ALGORITHMS.get(str(cc))
    if setting.get("pacer") in ("tcp", "auto") and not _asks_for_pacing(setting, variant):
        out.append(
            f"pacer={setting['pacer']}: TCP paces only where the congestion control asks it to (newcwv with "
            f"pacing=1), and the trial's cc is {cc!r}" + (" without pacing=1" if variant is not None else "")
        )
    if isinstance(setting.get("cc_params"), dict):
        if variant is None:
            out.append(f"cc_params is for a netrepro variant or port, and the trial's cc is {cc!r}")
        else:
            try:
                loader.parse_params(variant, dict(setting["cc_params"]))
            except loader.CongestionControlInputError as e:
                out.append(f"cc_params: {e}")
    if str(setting.get("pipeack_trace")) == "1" and cc != "newcwv":
        out.append(f"pipeack_trace=1 reads newcwv's own pipeACK; a trial has cc={cc} (allowed: newcwv)")
    return out


def _asks_for_pacing(setting: Mapping[str, Any], variant: loader.Variant | None) -> bool:
    if variant is None or not any(p.name == "pacing" for p in variant.params):
        return False
    given = setting.get("cc_params")
    table = given if isinstance(given, dict) else {}
    return str(setting.get("pacing", table.get("pacing", 0))) == "1"


def check_grid(where: str, grid: Sequence[Mapping[str, Any]], keys: Mapping[str, Key]) -> None:
    """Refuse a figure whose trials have a problem (UserError naming `where`, e.g. the figure or --set)."""
    for setting in grid:
        found = problems(setting, keys)
        if found:
            raise UserError(f"{where}: " + "; ".join(dict.fromkeys(found)))


# -- the parts of a trial ----------------------------------------------------------------


def path_params(setting: Mapping[str, Any]) -> dict[str, Any]:
    """The setting's path keys, as given (a path setting's name: shards.setting)."""
    return {name: setting[name] for name in PATH_KEYS if name in setting}


def lab_params(setting: Mapping[str, Any]) -> dict[str, Any]:
    """What a lab is built and verified for: the setting's path keys and topology keys (`pairs`), as given;
    trials with the same share a lab (shards.setting)."""
    return {**path_params(setting), **{name: setting[name] for name in TOPOLOGY_KEYS if name in setting}}


def trial_topology(setting: Mapping[str, Any], topology: Topology) -> Topology:
    """The figure's topology with the size the setting gives it (`pairs`: a dumbbell's); a size its shape
    cannot take raises QuantityError naming the key."""
    if "pairs" not in setting:
        return topology
    pairs = int(setting["pairs"])
    if topology.shape != "dumbbell":
        why = f"the figure's topology is a {topology.shape}; pairs is a dumbbell's"
        raise QuantityError("pairs", setting["pairs"], why)
    if topology.rtts and len(topology.rtts) != pairs:
        raise QuantityError(
            "pairs", setting["pairs"], f"the topology gives {len(topology.rtts)} per-pair RTTs: one per pair, or none"
        )
    sized = dataclasses.replace(topology, pairs=pairs)
    sized.check()
    return sized


def trial_path(setting: Mapping[str, Any]) -> PathSpec:
    """A trial's path, parsed once from its setting into typed units (ground.path's defaults for the keys
    it lacks); a value it cannot parse raises QuantityError naming the key."""
    return PathSpec.parse(**path_params(setting))


@dataclass(frozen=True)
class CongestionControl:
    """The congestion control a trial runs: its name (None: the hosts' default), and for a netrepro
    variant or port every parameter as the trial sets it (its defaults, then what the trial names)."""

    name: str | None
    tuning: Mapping[str, int] = field(default_factory=dict)

    @property
    def ours(self) -> bool:
        """A netrepro variant or port (kmod.loader.ALGORITHMS), loaded and tuned by the run."""
        return self.name in loader.ALGORITHMS


def congestion_control(setting: Mapping[str, Any]) -> CongestionControl:
    """The setting's congestion control, resolved: a variant's tuning from its own keys and cc_params."""
    name = setting.get("cc")
    if name is None:
        return CongestionControl(None)
    if str(name) not in loader.ALGORITHMS:
        return CongestionControl(str(name))
    variant = loader.algorithm(str(name))
    given: dict[str, Any] = {p.name: setting[p.name] for p in variant.params if p.name in setting}
    given.update(setting.get("cc_params") or {})
    return CongestionControl(str(name), loader.tuning(str(name), given))


@dataclass(frozen=True)
class Hosts:
    """The hosts' TCP settings a trial asks for (params.HOST_PARAMS but `cc`); None: the hosts' own."""

    initcwnd: int | None = None
    slow_start_after_idle: bool | None = None
    receive_buffer: int | None = None
    pacer: str | None = None  # tcp, fq or auto (Session.pace)


def hosts(setting: Mapping[str, Any]) -> Hosts:
    values = {
        k.name: k.typed(setting[k.name]) for k in HOST_PARAMS if k.name != "cc" and setting.get(k.name) is not None
    }
    return Hosts(**values)


# -- a workload's keys -------------------------------------------------------------------


def key(declared: Key) -> Any:
    """A field of a workload's parameters (a dataclass): the key's one declaration, default included."""
    return field(metadata={"key": declared})


def keys_of(keys_type: type) -> tuple[Key, ...]:
    """The keys a workload's parameter dataclass declares, in its order."""
    return tuple(f.metadata["key"] for f in dataclasses.fields(keys_type))


def workload_keys(keys_type: type[W], setting: Mapping[str, Any]) -> W:
    """The setting's workload parameters as `keys_type`: each key in its type, its default where the
    setting has none (None where it has neither)."""
    values = {}
    for f in dataclasses.fields(keys_type):  # type: ignore[arg-type]
        declared: Key = f.metadata["key"]
        value = setting.get(declared.name, declared.default)
        values[f.name] = None if value is None else declared.typed(value)
    return keys_type(**values)


# -- the trial ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Trial:
    """One trial of a figure, read once from its grid setting (`build`)."""

    setting: Mapping[str, Any]  # as the grid gave it: the trial key's and the row's parameter columns
    index: int
    key: str  # ground.trials.trial_key of (setting, index)
    path: PathSpec
    cc: CongestionControl
    hosts: Hosts
    topology: Topology
    series: str
    level: Any  # the figure's factor's value: where on the x axis
    workload: Any  # the workload's parameter dataclass (netrepro.runner.workloads)

    @property
    def lab_setting(self) -> dict[str, Any]:
        """The path and topology keys as given: trials with the same share a lab (shards.setting)."""
        return lab_params(self.setting)


def build(
    setting: Mapping[str, Any], index: int, factor: str, keys_type: type, topology: Topology | None = None
) -> Trial:
    """The trial `index` of a grid setting, its values read and typed once."""
    return Trial(
        setting=dict(setting),
        index=index,
        key=trial_key(setting, index),
        path=trial_path(setting),
        cc=congestion_control(setting),
        hosts=hosts(setting),
        topology=trial_topology(setting, topology or Topology()),
        series=str(setting.get("series", "")),
        level=setting.get(factor),
        workload=workload_keys(keys_type, setting),
    )


def build_all(
    grid: Iterable[Mapping[str, Any]], trials: int, factor: str, keys_type: type, topology: Topology | None = None
) -> list[Trial]:
    """Every trial of a grid: each setting `trials` times, in the grid's order."""
    return [build(s, i, factor, keys_type, topology) for s in grid for i in range(trials)]
