"""The report's one sentence on where every stored figure's rows came from (netrepro.front.report)."""

from expts import iw, newcwv
from netrepro.front.report import Entry, provenance
from netrepro.studykit.spec import Figure


def entry(fig: Figure, commits: list[str]) -> Entry:
    return Entry(fig, {"code_of_rows": commits}, "x.png")


def test_one_commit_is_said_as_one() -> None:
    said = provenance([entry(iw.FIG2, ["b0772b3aaaaaaaaa"]), entry(newcwv.FIG5, ["b0772b3aaaaaaaaa"])])
    assert said == "every figure's rows that name a commit come from one commit, b0772b3aaaaa"


def test_several_commits_and_unrecorded_rows_are_named() -> None:
    said = provenance(
        [
            entry(iw.FIG2, ["unrecorded"]),
            entry(iw.FIG5A, ["62f3a6d0aaaaaaaa"]),
            entry(newcwv.FIG5, ["b0772b3aaaaaaaaa", "unrecorded"]),
            entry(newcwv.FIG7, []),
        ]
    )
    assert said.startswith("the rows come from 2 commits: ")
    assert "62f3a6d0aaaa (1 figure)" in said and "b0772b3aaaaa (1 figure)" in said
    assert said.endswith("rows without their commit in 3: iw/fig2, newcwv/fig5, newcwv/fig7")
