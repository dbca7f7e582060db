"""A figure as the command line changes it: --set, --vary and --series, each value typed by its key.

`run.sh FIG --set rtt=80ms --vary loss=1%,2% --series cc=reno,cubic` runs
a figure of its own (spec.Figure.derive), with its own directory; every key
it names and every value it gives is checked against the keys a trial of
the figure may have (netrepro.studykit.params) before anything is built, and refused
as the user typed it, with what is allowed.
"""

from __future__ import annotations

import argparse

from ground.errors import UserError
from ground.units import QuantityError
from netrepro.runner.workloads import WORKLOADS
from netrepro.studykit import params, trial
from netrepro.studykit.spec import Figure
from topologies.topology import Topology


def keys_of(fig: Figure) -> dict[str, params.Key]:
    """Every key a trial of this figure may have (netrepro.studykit.params), by name."""
    return params.trial_keys(WORKLOADS[fig.workload].keys)


def typed_value(fig: Figure, option: str, key: str, text: str) -> object:
    """A value from the command line in the type its key declares (netrepro.studykit.params): a path quantity
    normalized (3000kbit is 3mbit), a whole number where the key takes one, a value among its choices.
    Refused as what the user typed, with what is allowed."""
    try:
        return keys_of(fig)[key].parse(text)
    except ValueError as e:
        raise UserError(f"{option} {key}={text}: {e}") from None


def overrides(fig: Figure, pairs: list[str], x: str | None = None) -> dict[str, object]:
    """--set KEY=VALUE: any key a trial of the figure takes, but its x factor (`x`, which --vary may move)
    and the keys every one of its series sets (a series that sets a key keeps its own value: web/plt's
    h2load series keep their client where `--set client=firefox` moves the browser's)."""
    series_keys = {k for k in {k for s in fig.series for k in s.params} if all(k in s.params for s in fig.series)}
    allowed = sorted(set(keys_of(fig)) - {x or fig.x, "series", "cc_params"} - series_keys)
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in allowed:
            raise QuantityError("--set", pair, f"give KEY=VALUE with KEY one of {', '.join(allowed)}")
        out[key] = typed_value(fig, "--set", key, value)
    return out


def levels(fig: Figure, option: str, text: str, allowed: list[str]) -> tuple[str, list[object]]:
    """--vary or --series KEY=V1,V2,...: the key, and its values typed, distinct, in the order given."""
    key, sep, values = text.partition("=")
    if not sep or key not in allowed:
        raise QuantityError(option, text, f"give KEY=V1,V2,... with KEY one of {', '.join(allowed)}")
    levels = [typed_value(fig, option, key, v.strip()) for v in values.split(",") if v.strip()]
    if not levels or len(set(map(str, levels))) != len(levels):
        raise QuantityError(option, text, "give one or more distinct values, separated by commas")
    return key, levels


def derived_figure(fig: Figure, args: argparse.Namespace, topo: Topology | None = None) -> Figure:
    """The figure as declared, or the figure --set, --vary and --series (`args`) derive from it
    (spec.Figure.derive), on `topo` if one was given; every trial of it checked against the keys it
    may have (netrepro.studykit.params)."""
    series_keys = {k for s in fig.series for k in s.params}
    settable = set(keys_of(fig)) - {"series", "cc_params"}
    vary = series = None
    if args.vary:
        vary = levels(fig, "--vary", args.vary, sorted(settable - series_keys))
    x = vary[0] if vary else fig.x
    if args.series:
        series = levels(fig, "--series", args.series, sorted(settable - {x}))
    derived = fig.derive(overrides(fig, args.set, x), vary=vary, series=series)
    if topo is not None:
        derived = derived.on(topo)
    trial.check_grid(derived.full_name, [*derived.grid(), *derived.grid(quick=True)], keys_of(derived))
    return derived
