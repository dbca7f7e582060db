"""Studies declared in TOML files: a user's figures, run by the same runner as `expts/`.

A file names its study and declares one or more figures, each as a figure
spec in `expts/` would (netrepro.studykit.spec.Figure): the workload, the factor on
the x axis and its levels, the series, the fixed parameters, the metric, the
trials, a quick variant, labels and the source's finding.  Everything is
checked when the file is read, before anything runs: an unknown key, a
value of the wrong type, a workload or metric netrepro does not have, a
path quantity that does not parse, a title field that is no fixed
parameter, mathtext (between `$` signs) that matplotlib could not draw;
the message names the file, the figure and the key.

    study = "mystudy"
    variation = { jitter = "1ms", why = "..." }   # optional; what its paths vary from trial to trial

    [[figure]]
    name = "iw50"
    title = "Download time vs initial window ({rate}, RTT {rtt})"
    workload = "download"
    y = "download_time_ms"
    x = { factor = "initcwnd", levels = [3, 10, 26], quick = [3, 26] }
    fixed = { rtt = "50ms", rate = "3mbit", cc = "cubic", protocol = "http/1.1", object_bytes = 37000 }
    series = [ { label = "CUBIC" } ]       # optional; each a label and its parameters
    topology = { shape = "dumbbell", rtts = ["40ms", "120ms"] }  # optional; the lab's shape (run.sh --topo)

    [[figure.claim]]                      # optional; the source's sentences, each with its test
    quote = "a significant benefit to raising the initial congestion window from 3 to 10"
    where = "Experimental Results, Figure 2"
    test = "better"                        # better, same, within, trend or by_design (CLAIM_KEYS)
    winner = { initcwnd = 10 }             # a series' label, or a table of parameters
    loser = { initcwnd = 3 }
    higher = false
    worth = 0.10

A figure's claims are judged as a built-in figure's are (netrepro.studykit.claims).
The study's `variation` is what its paths vary from trial to trial, as a
built-in study declares it (netrepro.studykit.variation): each link
direction's delay jitter and why that much; without one its trials differ
by their start phase and random loss alone.
A study file's results go to results/<study>/ like any figure's; its study
may not take the name of one of netrepro's own.
"""

from __future__ import annotations

import dataclasses
import string
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # Ubuntu 22.04's Python 3.10: the same parser, from PyPI
    import tomli as tomllib

from ground.errors import UserError
from ground.units import QuantityError
from netrepro.studykit import cells, claims, decisions, params, plot, trial
from netrepro.studykit.spec import Figure, Series, file_keys
from netrepro.studykit.trial import trial_path, trial_topology
from netrepro.studykit.variation import NO_VARIATION, Variation
from topologies.topology import Topology

FIGURE_KEYS = file_keys()  # declared with Figure's fields (netrepro.studykit.spec.in_file)
# A claim of a study file: the source's sentence and its test, as netrepro.studykit.claims declares them.  A group
# is a series' label or a table of parameters ({ initcwnd = 10 }); a group naming the figure's own x factor
# compares levels of it (decisions.Regrouped).
CLAIM_KEYS = {
    "quote": "the source's sentence, verbatim",
    "where": "where it stands in the source (section, figure)",
    "source": "the source's text, a file relative to the study file: when given, the quote must stand in it",
    "reading": "how the sentence is read: the metric, the groups, what its words' margin is and why",
    "test": "better, same, within, trend or by_design",
    "metric": "the metric tested (default: the figure's y)",
    "levels": "the levels of the x factor the claim covers (default: all)",
    "winner": "better: the group that wins",
    "loser": "better: the group it beats",
    "higher": "better, trend: whether higher is better / the trend rises (default true)",
    "worth": "better: the smallest relative gain the word is worth (default 0.05)",
    "groups": "same: the groups alike",
    "margin": "same: the relative margin of 'the same' (e.g. 0.1)",
    "of": "within: the group whose ratio to `to` is tested",
    "to": "within: the group it is a ratio to",
    "low": "within: the band's low end (a ratio)",
    "high": "within: the band's high end (a ratio)",
    "series": "trend: the group whose metric rises or falls",
    "against": "trend: a group the series is a ratio to",
    "reason": "by_design: why the setup decides the outcome",
    "could_fail": "by_design: the derived figure that would let it fail",
}
CLAIM_TESTS = {
    "better": ("winner", "loser"),
    "same": ("groups", "margin"),
    "within": ("of", "to"),
    "trend": ("series",),
    "by_design": ("reason",),
}
TOPOLOGY_KEYS = ("shape", "pairs", "rtts", "routers", "cross", "links")
# Each topology key's TOML type (links: a list of strings), as Topology.parse takes it.
TOPOLOGY_TYPES = (
    ("shape", str, 'a string, e.g. "dumbbell"'),
    ("pairs", int, "a whole number, e.g. 2"),
    ("rtts", list, 'a list of times, one per pair, e.g. ["40ms", "120ms"] (or one string, "40ms,120ms")'),
    ("routers", int, "a whole number, e.g. 2"),
    ("cross", bool, "true or false"),
)
X_KEYS = ("factor", "levels", "quick")


class StudyFileError(UserError):
    """A study file that cannot be run as it stands."""


def load(path: Path) -> list[Figure]:
    """The figures a study file declares, checked (StudyFileError names the file, figure and key)."""
    from expts import STUDIES

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise StudyFileError(f"{path}: cannot read it ({e.strerror or e})") from None
    except UnicodeDecodeError as e:
        raise StudyFileError(
            f"{path}: not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start}); "
            "a study file is TOML, in UTF-8"
        ) from None
    except tomllib.TOMLDecodeError as e:
        raise StudyFileError(f"{path}: not valid TOML ({e})") from None
    unknown = sorted(set(doc) - {"study", "variation", "figure"})
    if unknown:
        raise StudyFileError(
            f"{path}: unknown top-level key {unknown[0]!r}; a study file has `study`, `variation` and [[figure]]"
        )
    study = doc.get("study")
    if not isinstance(study, str) or not _is_name(study):
        raise StudyFileError(f'{path}: give `study = "NAME"` (letters, digits, - and _), not {study!r}')
    builtin = {s.__name__.rsplit(".", 1)[-1] for s in STUDIES}
    if study in builtin:
        raise StudyFileError(f"{path}: study {study!r} is one of netrepro's own ({', '.join(sorted(builtin))})")
    figures = doc.get("figure")
    if not isinstance(figures, list) or not figures:
        raise StudyFileError(f"{path}: declare at least one figure as a [[figure]] table")
    varies = _variation(path, doc.get("variation"))
    out = [dataclasses.replace(_figure(path, study, i, table), variation=varies) for i, table in enumerate(figures)]
    names = [f.name for f in out]
    if len(set(names)) != len(names):
        raise StudyFileError(f"{path}: two figures are named {next(n for n in names if names.count(n) > 1)!r}")
    return out


def _variation(path: Path, table: Any) -> Variation:
    """The study's declared variation (`variation = { jitter = "1ms", why = "..." }`), or none."""
    if table is None:
        return NO_VARIATION
    shape = 'variation = { jitter = "1ms", why = "what in the source\'s network varies that much" }'
    if not isinstance(table, dict) or set(table) != {"jitter", "why"}:
        raise StudyFileError(f"{path}: give {shape}, not {table!r}")
    jitter, why = table["jitter"], table["why"]
    if not isinstance(jitter, str) or not isinstance(why, str) or not why.strip():
        raise StudyFileError(f"{path}: give {shape} (two strings, the reason not empty), not {table!r}")
    try:
        return Variation.of(jitter, why)
    except QuantityError as e:
        raise StudyFileError(f"{path}: variation's jitter: {e}") from None


def _is_name(text: str) -> bool:
    return bool(text) and text.replace("-", "").replace("_", "").isalnum() and text.isascii()


def _figure(path: Path, study: str, index: int, table: Any) -> Figure:
    from netrepro.runner.workloads import WORKLOADS

    where = f"{path}: figure {index + 1}"
    if not isinstance(table, dict):
        raise StudyFileError(f"{where}: a figure is a table of keys")
    if isinstance(table.get("name"), str):
        where = f"{path}: figure {table['name']!r}"
    for key in table:
        if key not in FIGURE_KEYS:
            allowed = ", ".join(FIGURE_KEYS)
            raise StudyFileError(f"{where}: unknown key {key!r}; a figure takes {allowed}")
    for key in ("name", "title", "workload", "y", "x", "fixed"):
        if key not in table:
            raise StudyFileError(f"{where}: `{key}` is missing ({FIGURE_KEYS[key]})")
    name = _text(where, table, "name")
    if not _is_name(name):
        raise StudyFileError(f"{where}: name {name!r}: use letters, digits, - and _")
    workload = _text(where, table, "workload")
    if workload not in WORKLOADS:
        raise StudyFileError(f"{where}: workload {workload!r}; netrepro has {', '.join(WORKLOADS)}")
    y = _text(where, table, "y")
    metrics = WORKLOADS[workload].metrics
    if y not in metrics:
        raise StudyFileError(f"{where}: y = {y!r} is not a metric of {workload}; it reports {', '.join(metrics)}")
    x = table["x"]
    if not isinstance(x, dict) or set(x) - set(X_KEYS) or "factor" not in x or "levels" not in x:
        raise StudyFileError(f"{where}: x = {{ factor = KEY, levels = [...], quick = [...] }}, not {x!r}")
    factor = _text(where, x, "factor", "x.factor")
    levels = _values(where, x, "levels", "x.levels")
    quick = _values(where, x, "quick", "x.quick") if "quick" in x else None
    if quick is not None and not set(map(str, quick)) <= set(map(str, levels)):
        raise StudyFileError(f"{where}: x.quick {quick!r} must be among x.levels {levels!r}")
    fixed = table["fixed"]
    if not isinstance(fixed, dict):
        raise StudyFileError(f"{where}: fixed = {{ KEY = VALUE, ... }}, not {fixed!r}")
    if factor in fixed:
        raise StudyFileError(f"{where}: {factor!r} is the x factor and cannot also be fixed")
    series = tuple(_series(where, i, s) for i, s in enumerate(table.get("series") or [{"label": ""}]))
    for key in ("x_label", "y_label", "finding"):
        if not isinstance(table.get(key, ""), str):
            raise StudyFileError(f"{where}: {key} = {table[key]!r}: give a string")
    for key in ("x_log", "y_log"):
        if not isinstance(table.get(key, False), bool):
            raise StudyFileError(f"{where}: {key} = {table[key]!r}: give true or false")
    deviations = table.get("deviations", [])
    if not isinstance(deviations, list) or not all(isinstance(d, str) for d in deviations):
        raise StudyFileError(f'{where}: deviations = {deviations!r}: give a list of strings, ["...", ...]')
    figure = Figure(
        study=study,
        name=name,
        title=_title(where, table, fixed),
        workload=workload,
        x=factor,
        levels=tuple(levels),
        y=y,
        fixed=dict(fixed),
        series=series,
        trials=_whole(where, table, "trials", 10),
        quick_levels=tuple(quick) if quick is not None else None,
        quick_trials=_whole(where, table, "quick_trials", 3),
        x_label=table.get("x_label", ""),
        y_label=table.get("y_label", ""),
        x_log=table.get("x_log", False),
        y_log=table.get("y_log", False),
        finding=table.get("finding", ""),
        deviations=tuple(deviations),
        trial_timeout=_timeout(float(_whole(where, table, "timeout_s", 120))),
        topology=_topology(where, table.get("topology", {})),
    )
    grid = [*figure.grid(), *figure.grid(quick=True)]
    for setting in grid:
        try:
            trial_path(setting)
            trial_topology(setting, figure.topology)
        except QuantityError as e:
            raise StudyFileError(
                f"{where}: {e.option.removeprefix('--').replace('-', '_')} {e.value!r}: {e.why}"
            ) from None
    try:
        trial.check_grid(where, grid, params.trial_keys(WORKLOADS[workload].keys))
    except UserError as e:
        raise StudyFileError(str(e)) from None
    drawn = plot.drawn_text_problem(figure)  # matplotlib parses its mathtext only when it draws: after the trials
    if drawn:
        raise StudyFileError(f"{where}: {drawn}")
    stated = table.get("claim", [])
    if not isinstance(stated, list) or not all(isinstance(c, dict) for c in stated):
        raise StudyFileError(f"{where}: claims are [[figure.claim]] tables")
    found = tuple(_claim(f"{where}: claim {i + 1}", path, figure, metrics, c) for i, c in enumerate(stated))
    return dataclasses.replace(figure, claims=found)


def _claim(where: str, path: Path, fig: Figure, metrics: Any, table: Mapping[str, Any]) -> claims.Claim:
    """A [[figure.claim]] table as a netrepro.studykit.claims.Claim, every key checked."""
    for key in table:
        if key not in CLAIM_KEYS:
            raise StudyFileError(f"{where}: unknown key {key!r}; a claim takes {', '.join(CLAIM_KEYS)}")
    for key in ("quote", "where", "test"):
        if key not in table:
            raise StudyFileError(f"{where}: `{key}` is missing ({CLAIM_KEYS[key]})")
    quote, kind = _text(where, table, "quote"), _text(where, table, "test")
    if kind not in CLAIM_TESTS:
        raise StudyFileError(f"{where}: test = {kind!r}; a claim's test is one of {', '.join(CLAIM_TESTS)}")
    for key in CLAIM_TESTS[kind]:
        if key not in table:
            raise StudyFileError(f"{where}: a {kind} claim needs `{key}` ({CLAIM_KEYS[key]})")
    source = ""
    if "source" in table:
        text_path = path.parent / _text(where, table, "source")
        try:
            text = text_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise StudyFileError(f"{where}: source {text_path}: cannot read it as UTF-8 text ({e})") from None
        if not claims.found_in(quote, text):
            raise StudyFileError(f"{where}: the quote {quote!r} does not stand verbatim in {text_path}")
        source = str(table["source"])
    metric = table.get("metric", fig.y)
    if metric not in metrics:
        raise StudyFileError(f"{where}: metric = {metric!r}; {fig.workload} reports {', '.join(metrics)}")
    levels = table.get("levels")
    if levels is not None and (not isinstance(levels, list) or not set(map(str, levels)) <= set(map(str, fig.levels))):
        raise StudyFileError(f"{where}: levels = {levels!r}: give a list of the figure's levels {list(fig.levels)!r}")
    labels = {s.label for s in fig.series}
    regrouped = False

    def grouped(key: str, value: Any) -> cells.Group:
        nonlocal regrouped
        if isinstance(value, str) and value in labels:
            return cells.Group(series=value)
        if isinstance(value, dict) and value and all(isinstance(v, str | int | float) for v in value.values()):
            regrouped = regrouped or fig.x in value
            return cells.Group(where={k: str(v) for k, v in value.items()})
        raise StudyFileError(
            f"{where}: {key} = {value!r}: give a series' label ({', '.join(map(repr, sorted(labels)))}) "
            "or a table of parameters, e.g. { initcwnd = 10 }"
        )

    def number(key: str, default: float | None = None) -> float:
        value = table.get(key, default)
        if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
            raise StudyFileError(f"{where}: {key} = {value!r}: give a number, 0 or more")
        return float(value)

    higher = table.get("higher", True)
    if not isinstance(higher, bool):
        raise StudyFileError(f"{where}: higher = {higher!r}: give true or false")
    at = tuple(levels) if levels is not None else None
    test: decisions.Test
    if kind == "better":
        test = decisions.Better(
            metric,
            grouped("winner", table["winner"]),
            grouped("loser", table["loser"]),
            higher=higher,
            levels=at,
            worth=number("worth", 0.05),
        )
    elif kind == "same":
        groups = table["groups"]
        if not isinstance(groups, list) or len(groups) < 2:
            raise StudyFileError(f"{where}: groups = {groups!r}: give a list of two groups or more")
        test = decisions.Same(metric, [grouped("groups", g) for g in groups], margin=number("margin"), levels=at)
    elif kind == "within":
        low, high = number("low", 0.0), number("high", float("inf"))
        test = decisions.Within(metric, grouped("of", table["of"]), grouped("to", table["to"]), low, high, levels=at)
    elif kind == "trend":
        against = grouped("against", table["against"]) if "against" in table else None
        test = decisions.Trend(metric, grouped("series", table["series"]), rises=higher, against=against, levels=at)
    else:
        test = decisions.ByDesign(_text(where, table, "reason"), str(table.get("could_fail", "")))
    if regrouped:  # groups drawn across the figure's x factor: one view holding every trial
        test = decisions.Regrouped(test)
    reading = table.get("reading", "")
    if not isinstance(reading, str):
        raise StudyFileError(f"{where}: reading = {reading!r}: give a string")
    return claims.Claim(source=source, where=_text(where, table, "where"), quote=quote, test=test, why=reading)


def _title(where: str, table: Mapping[str, Any], fixed: Mapping[str, Any]) -> str:
    """The title, its {KEY} fields checked: each a fixed parameter's name, filled as the figure's heading is."""
    title = _text(where, table, "title")
    allowed = f"a {{KEY}} field is filled from the fixed parameters ({', '.join(fixed)}); {{{{ and }}}} are braces"
    try:
        fields = [(f, conversion, spec) for _, f, spec, conversion in string.Formatter().parse(title) if f is not None]
    except ValueError as e:
        raise StudyFileError(f"{where}: title {title!r}: {e}; {allowed}") from None
    for field, conversion, spec in fields:
        if not field.isidentifier():
            raise StudyFileError(f"{where}: title {title!r}: field {{{field}}} is not a KEY; {allowed}")
        if field not in fixed:
            raise StudyFileError(f"{where}: title {title!r}: {field!r} is not a fixed parameter; {allowed}")
        try:  # a heading's values are text: what formats one formats any
            ("{0" + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}").format("")
        except (IndexError, KeyError, ValueError) as e:
            why = str(e) if isinstance(e, ValueError) else f"a field nested in its format ({e})"
            raise StudyFileError(f"{where}: title {title!r}: field {{{field}}}: {why}; {allowed}") from None
    return title


def _topology(where: str, table: Any) -> Topology:
    """The figure's `topology` table, checked as run.sh's --topo options are."""
    if not isinstance(table, dict) or set(table) - set(TOPOLOGY_KEYS):
        raise StudyFileError(
            f"{where}: topology = {{ {', '.join(f'{k} = ...' for k in TOPOLOGY_KEYS)} }}, not {table!r}"
        )
    links = table.get("links", [])
    if not isinstance(links, list) or not all(isinstance(t, str) for t in links):
        raise StudyFileError(f'{where}: topology.links = ["A-B:KEY=VALUE,...", ...], not {links!r}')
    rtts = table.get("rtts")
    if isinstance(rtts, str):  # the form before lists: one string, comma-separated
        rtts = [t.strip() for t in rtts.split(",")]
    for key, kind, allowed in TOPOLOGY_TYPES:
        value = rtts if key == "rtts" else table.get(key)
        wrong = kind is list and not (isinstance(value, list) and value and all(isinstance(t, str) for t in value))
        if value is not None and (wrong or not isinstance(value, kind) or (kind is int and isinstance(value, bool))):
            raise StudyFileError(f"{where}: topology.{key} = {table.get(key)!r}: give {allowed}")
    try:
        return Topology.parse(
            str(table.get("shape", "path")),
            pairs=table.get("pairs"),
            rtts=",".join(rtts) if rtts else None,
            routers=table.get("routers"),
            cross=table.get("cross", False),
            links=links,
        )
    except QuantityError as e:
        raise StudyFileError(f"{where}: topology {e.option.removeprefix('--')} {e.value!r}: {e.why}") from None


def _timeout(seconds: float) -> Any:
    return lambda trial: seconds


def _text(where: str, table: Mapping[str, Any], key: str, shown: str = "") -> str:
    value = table[key]
    if not isinstance(value, str) or not value:
        raise StudyFileError(f"{where}: {shown or key} = {value!r}: give a non-empty string")
    return value


def _values(where: str, table: Mapping[str, Any], key: str, shown: str) -> list[Any]:
    value = table[key]
    if not isinstance(value, list) or not value or len(set(map(str, value))) != len(value):
        raise StudyFileError(f"{where}: {shown} = {value!r}: give a list of distinct values")
    return value


def _whole(where: str, table: Mapping[str, Any], key: str, default: int) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 10_000:
        raise StudyFileError(f"{where}: {key} = {value!r}: give a whole number from 1 to 10000")
    return value


def _series(where: str, index: int, table: Any) -> Series:
    if not isinstance(table, dict) or not isinstance(table.get("label", ""), str):
        raise StudyFileError(f'{where}: series {index + 1}: a table {{ label = "...", KEY = VALUE, ... }}')
    params = {k: v for k, v in table.items() if k != "label"}
    return Series(str(table.get("label", "")), params)
