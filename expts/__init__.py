"""Figures declared as data, one module per study, and the registry that names them.

A figure is named in full (`iw/fig2`) or by its bare name where that is
unique (`fig2`); an ambiguous bare name is refused with the candidates.
Each study also declares the derived figures results/reference keeps
(`KEPT`, netrepro.studykit.kept), and the modules its declarations live in
(`modules_of`) are what netrepro.studykit.declared reads them from.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

from ground.errors import UserError
from netrepro.studykit import declared
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure

from . import bufferbloat, cubicplus, iw, linuxcc, newcwv, spdy, web

STUDIES = (iw, cubicplus, spdy, newcwv, linuxcc, web, bufferbloat)


class UnknownFigure(UserError, LookupError):
    pass


def all_figures() -> list[Figure]:
    return [fig for study in STUDIES for fig in study.FIGURES]


def kept() -> list[tuple[Figure, Kept]]:
    """Every derived figure results/reference keeps (each study's KEPT), with the declared figure it derives from."""
    return [(find(f"{study.FIGURES[0].study}/{k.figure}"), k) for study in STUDIES for k in study.KEPT]


def kept_figures() -> list[Figure]:
    """The derived figures results/reference keeps, each as `run.sh FIG --set KEY=VALUE` runs it."""
    return [k.of(fig) for fig, k in kept()]


def with_kept() -> list[Figure]:
    """Every declared figure, each followed by the derived figures results/reference keeps of it (its study's
    KEPT), each of these followed by its twin without the study's variation (Figure.unvaried: rows measured
    before trials varied, not measured again)."""
    out = []
    for fig in measured_of(all_figures()):
        twin = fig.unvaried()
        out += [fig, *([twin] if twin is not None else [])]
    return out


def measured_of(figures: list[Figure]) -> list[Figure]:
    """The figures, each followed by the derived figures of its study's KEPT (those a reference run measures)."""
    derived = kept()
    return [
        each
        for fig in figures
        for each in (fig, *(k.of(base) for base, k in derived if base.full_name == fig.full_name))
    ]


def kept_entry(fig: Figure) -> Kept | None:
    """The KEPT entry that declares the derived figure `fig`, or None (a declared figure, or one not kept)."""
    return (
        next((k for declared, k in kept() if k.of(declared).full_name == fig.full_name), None) if fig.variant else None
    )


def modules_of(study: str) -> list[ModuleType]:
    """The modules a study's figures and claims are declared in: expts/<study>.py, then its expts/<study>_*.py."""
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.name == study or m.name.startswith(f"{study}_")]
    return [importlib.import_module(f"{__name__}.{n}") for n in sorted(names, key=lambda n: (n != study, n))]


def declaration(fig: Figure) -> declared.Declaration:
    """Where `fig` (declared or kept derived) and its claims are declared, and the commit that last changed them."""
    return declared.declaration(fig, modules_of(fig.study), kept_entry(fig))


def find(name: str) -> Figure:
    figures = all_figures()
    exact = [f for f in figures if f.full_name == name]
    if exact:
        return exact[0]
    bare = [f for f in figures if f.name == name]
    if len(bare) == 1:
        return bare[0]
    if bare:
        raise UnknownFigure(f"{name!r} is ambiguous: " + ", ".join(f.full_name for f in bare))
    raise UnknownFigure(f"no figure {name!r}; `run.sh list` shows them all")
