"""Figures declared as data, one module per study, and the registry that names them.

A figure is named in full (`iw/fig2`) or by its bare name where that is
unique (`fig2`); an ambiguous bare name is refused with the candidates.
"""

from __future__ import annotations

from ground.errors import UserError
from netrepro.studykit.spec import Figure

from . import bufferbloat, cubicplus, iw, linuxcc, newcwv, spdy, web

STUDIES = (iw, cubicplus, spdy, newcwv, linuxcc, web, bufferbloat)


class UnknownFigure(UserError, LookupError):
    pass


def all_figures() -> list[Figure]:
    return [fig for study in STUDIES for fig in study.FIGURES]


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
