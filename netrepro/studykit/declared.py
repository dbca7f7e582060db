"""The commit that last changed a figure's declaration, and whether its rows were measured after it.

A figure's declaration is its call in the study's source (`Figure(...)`, or
a helper the study declares its figures with, named by `name="..."` or its
first string), the assignment of each claim it is judged by (the claim's
element where a tuple of claims holds it), and for a derived figure the
reference keeps, its `Kept(...)` entry (netrepro.studykit.kept), each found
with `ast` as lines of a file (`Extent`).  The newest commit that changed
any of those lines (`git log -L`) is the declaration's commit.  Its rows
were measured after it when it is their commit or an ancestor of it
(`standing`): a figure declared, or whose claims changed, after its rows
were in is marked.  Where git, the history, a line or a commit is not here
(a tarball, a shallow clone), the answer is unknown, never a guess; where
the lines are changed and not committed, the declaration is newer than any
commit.  A study's helper functions and shared constants are not followed:
the calls and the claims are the declaration.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ground import proc, results
from netrepro.studykit.claims import Claim
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure

BEFORE, NEWER, UNKNOWN = "before", "newer", "unknown"


@dataclass(frozen=True, order=True)
class Extent:
    """Lines `start` to `end` (from 1, both in) of a file, by its path in the repository."""

    path: str
    start: int
    end: int

    def __str__(self) -> str:
        return f"{self.path}:{self.start}-{self.end}"


@dataclass(frozen=True)
class Declaration:
    """Where a figure is declared, and the commit that last changed it (None: `why`)."""

    figure: str
    extents: tuple[Extent, ...]
    commit: str | None
    why: str = ""  # why there is no commit: no history here, a part not found, lines not committed
    uncommitted: bool = False  # the lines are changed in the working tree: newer than any commit

    def manifest(self) -> dict[str, Any]:
        """What a figure's manifest records of it (`declared`)."""
        return {
            "commit": self.commit,
            "extents": [str(e) for e in self.extents],
            **({"why": self.why} if self.why else {}),
            **({"uncommitted": True} if self.uncommitted else {}),
        }


@dataclass(frozen=True)
class Standing:
    """Whether a figure's declaration predates its rows: before, newer or unknown, and what says so."""

    state: str
    declared: str | None
    rows: tuple[str, ...]
    why: str = ""

    @property
    def marked(self) -> bool:
        return self.state == NEWER

    def text(self) -> str:
        rows = ", ".join(self.rows) or "none named"
        declared = (self.declared or "")[:12]
        if self.state == BEFORE:
            return f"declared before its rows (declared {declared}, rows {rows})"
        if self.state == NEWER:
            what = "uncommitted changes" if self.declared is None else declared
            return f"declaration newer than its rows (declared {what}, rows {rows})"
        return f"whether its declaration predates its rows is unknown: {self.why}"


# -- where a figure is declared: lines of the study's source --------------------------------------


def _tree(path: Path) -> ast.Module:
    stat = path.stat()
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


@functools.cache
def _parsed(path: Path, mtime_ns: int, size: int) -> ast.Module:
    """A source file's syntax tree, read once per version of the file (its time and size)."""
    return ast.parse(path.read_text(), str(path))


def _sources(modules: Sequence[ModuleType]) -> Iterator[tuple[ModuleType, Path]]:
    """Each module with the file it was read from (one without a file is skipped)."""
    for module in modules:
        found = getattr(module, "__file__", None)
        if found:
            yield module, Path(found).resolve()


def _extent(path: Path, node: ast.AST, repo: Path) -> Extent:
    start = int(getattr(node, "lineno", 0))
    end = int(getattr(node, "end_lineno", None) or start)
    return Extent(str(path.relative_to(repo.resolve())), start, end)


def _makers(tree: ast.Module) -> set[str]:
    """The names a module declares figures with: Figure, and its functions annotated to return one."""
    names = {"Figure"}
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        returns = node.returns
        if (isinstance(returns, ast.Name) and returns.id == "Figure") or (
            isinstance(returns, ast.Constant) and returns.value == "Figure"
        ):
            names.add(node.name)
    return names


def _called(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _outermost_calls(node: ast.AST, names: set[str]) -> Iterator[ast.Call]:
    """The calls of `names` under `node`, not those inside one of them."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Call) and _called(child) in names:
            yield child
        else:
            yield from _outermost_calls(child, names)


def _argument(call: ast.Call, keyword: str, position: int) -> ast.expr | None:
    for k in call.keywords:
        if k.arg == keyword:
            return k.value
    return call.args[position] if len(call.args) > position else None


def _literal(node: ast.expr | None) -> Any:
    try:
        return ast.literal_eval(node) if node is not None else None
    except ValueError:
        return None


def figure_extent(name: str, modules: Sequence[ModuleType], repo: Path = results.REPO) -> Extent | None:
    """The call that declares the figure `name` (its `name=` or first string) in the first module with it."""
    for _, path in _sources(modules):
        tree = _tree(path)
        for call in _outermost_calls(tree, _makers(tree)):
            if _literal(_argument(call, "name", 0)) == name:
                return _extent(path, call, repo)
    return None


def _assigned(tree: ast.Module) -> Iterator[tuple[str, ast.stmt, ast.expr]]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.value is not None:
            for target in node.targets:
                if isinstance(target, ast.Name):
                    yield target.id, node, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            yield node.target.id, node, node.value


def claim_extent(claim: Claim, modules: Sequence[ModuleType], repo: Path = results.REPO) -> Extent | None:
    """The module-level assignment of the claim, or its element in an assigned tuple of claims (the whole
    assignment where its elements are not written one by one), in the module that assigns it."""
    in_tuple: Extent | None = None
    for module, path in _sources(modules):
        for name, node, value in _assigned(_tree(path)):
            held = getattr(module, name, None)
            if held is claim:
                return _extent(path, node, repo)
            if in_tuple is None and isinstance(held, tuple) and any(v is claim for v in held):
                index = next(i for i, v in enumerate(held) if v is claim)
                elements = value.elts if isinstance(value, ast.Tuple) else []
                if len(elements) == len(held) and not any(isinstance(e, ast.Starred) for e in elements):
                    in_tuple = _extent(path, elements[index], repo)
                else:
                    in_tuple = _extent(path, node, repo)
    return in_tuple


def kept_extent(kept: Kept, modules: Sequence[ModuleType], repo: Path = results.REPO) -> Extent | None:
    """The `Kept(...)` entry that declares a derived figure the reference keeps."""
    for _, path in _sources(modules):
        for call in _outermost_calls(_tree(path), {"Kept"}):
            figure, overrides = _literal(_argument(call, "figure", 0)), _literal(_argument(call, "overrides", 1))
            if figure == kept.figure and overrides == dict(kept.overrides):
                return _extent(path, call, repo)
    return None


def extents(
    fig: Figure, modules: Sequence[ModuleType], kept: Kept | None = None, repo: Path = results.REPO
) -> tuple[tuple[Extent, ...], list[str]]:
    """The lines that declare `fig` (the declared figure of a derived one) and its claims, and its `Kept`
    entry; and the parts not found (named)."""
    declared = fig.declared or fig
    found: list[Extent] = []
    missing: list[str] = []
    call = figure_extent(declared.name, modules, repo)
    found += [call] if call else []
    missing += [] if call else [f"the call that declares {declared.full_name}"]
    for claim in kept.claims if kept is not None else declared.claims:
        at = claim_extent(claim, modules, repo)
        if at is not None:
            found.append(at)
        elif call is None or not _inside(claim, call, repo):
            missing.append(f"the claim {claim.where!r} ({claim.quote[:40]}...)")
    if kept is not None:
        entry = kept_extent(kept, modules, repo)
        found += [entry] if entry else []
        missing += [] if entry else [f"the Kept entry of {fig.full_name}"]
    return tuple(sorted(set(found))), missing


def _inside(claim: Claim, call: Extent, repo: Path) -> bool:
    """Whether a claim not assigned to a name is written inside the figure's call (its quote's start there)."""
    lines = (repo / call.path).read_text().splitlines()[call.start - 1 : call.end]
    return claim.quote[:30] in "\n".join(lines)


# -- the commit that last changed those lines ------------------------------------------------------


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess[str] | None:
    """A git command on `repo`, or None where git is not installed."""
    try:
        return proc.run(results.git_argv(*args, repo=repo), check=False)
    except (FileNotFoundError, proc.CommandError):
        return None


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.MULTILINE)


@functools.cache
def _changes(repo: Path, head: str, path: str, stamp: tuple[int, int]) -> tuple[tuple[int, int, int, int], ...] | None:
    """The working tree's hunks of a file against HEAD (old start, old count, new start, new count), once
    per HEAD and version of the file (`stamp`); None where HEAD has no such file."""
    if (found := _git(repo, "cat-file", "-e", f"HEAD:{path}")) is None or found.returncode != 0:
        return None
    diff = _git(repo, "diff", "-U0", "--no-color", "--no-ext-diff", "HEAD", "--", path)
    text = diff.stdout if diff is not None else ""
    return tuple(
        (int(a), int(b or 1), int(c), int(d or 1))
        for a, b, c, d in ((m[1], m[2], m[3], m[4]) for m in _HUNK.finditer(text))
    )


def _stamp(repo: Path, path: str) -> tuple[int, int]:
    stat = (repo / path).stat()
    return stat.st_mtime_ns, stat.st_size


def at_head(extent: Extent, repo: Path, head: str) -> Extent | None:
    """The extent's lines as HEAD numbers them; None where the working tree changes them (or HEAD lacks
    the file): uncommitted."""
    hunks = _changes(repo, head, extent.path, _stamp(repo, extent.path))
    if hunks is None:
        return None
    shift = 0
    for _old_start, old_count, new_start, new_count in hunks:
        if new_count and new_start <= extent.end and new_start + new_count - 1 >= extent.start:
            return None  # lines of the extent changed
        if not new_count and extent.start <= new_start < extent.end:
            return None  # lines removed from inside it
        if (new_start + new_count - 1 if new_count else new_start) < extent.start:
            shift += old_count - new_count
    return Extent(extent.path, extent.start + shift, extent.end + shift)


def head_of(repo: Path) -> tuple[str | None, str]:
    """`repo`'s HEAD commit, or None with why its history cannot say what changed a line."""
    found = _git(repo, "rev-parse", "--is-shallow-repository", "HEAD")
    if found is None:
        return None, "git is not installed"
    if found.returncode != 0:
        return None, f"{repo} is not a git checkout with a commit (a copy without its history)"
    shallow, head = [*found.stdout.split(), "", ""][:2]
    if shallow == "true":
        return None, "a shallow clone: the commits that may have changed it are not here"
    return head, ""


def last_commit(repo: Path, found: tuple[Extent, ...]) -> tuple[str | None, str, bool]:
    """The newest commit that changed any of the extents (`git log -L`, one command for all); or None,
    with why, and whether that is because the lines are changed and not committed."""
    if not found:
        return None, "nothing of its declaration was found in the source", False
    head, missing = head_of(repo)
    if head is None:
        return None, missing, False
    return _last_commit(repo, head, found, tuple(_stamp(repo, e.path) for e in found))


@functools.cache
def _last_commit(
    repo: Path, head: str, found: tuple[Extent, ...], stamps: tuple[tuple[int, int], ...]
) -> tuple[str | None, str, bool]:
    """last_commit, once per HEAD and version of the files (`stamps`)."""
    committed = [at_head(e, repo, head) for e in found]
    if any(e is None for e in committed):
        changed = ", ".join(str(e) for e, c in zip(found, committed, strict=True) if c is None)
        return None, f"not committed: {changed}", True
    ranges = [arg for e in committed if e is not None for arg in ("-L", f"{e.start},{e.end}:{e.path}")]
    log = _git(repo, "log", "-1", "--format=%H", "--no-patch", *ranges, head)
    commit = log.stdout.strip() if log is not None and log.returncode == 0 else ""
    if not commit:
        why = (log.stderr.strip().splitlines() or ["no output"])[-1] if log is not None else "git failed"
        return None, f"git log -L found no commit ({why})", False
    return commit, "", False


def declaration(
    fig: Figure, modules: Sequence[ModuleType], kept: Kept | None = None, repo: Path = results.REPO
) -> Declaration:
    """Where `fig` is declared in `modules` (its study's: the figure, its claims; `kept`: a derived figure's
    entry) and the commit that last changed it."""
    found, missing = extents(fig, modules, kept, repo)
    if missing:
        return Declaration(fig.full_name, found, None, "not found in the source: " + "; ".join(missing))
    commit, why, uncommitted = last_commit(repo.resolve(), found)
    return Declaration(fig.full_name, found, commit, why, uncommitted)


def claim_declaration(
    claim: Claim, modules: Sequence[ModuleType], kept: Kept | None = None, repo: Path = results.REPO
) -> Declaration:
    """Where one claim is declared (with a derived figure's `Kept` entry, which names it for that figure),
    and the commit that last changed it."""
    what = f"the claim {claim.where!r}"
    found = [e for e in (claim_extent(claim, modules, repo), kept_extent(kept, modules, repo) if kept else None) if e]
    if len(found) != 1 + (kept is not None):
        return Declaration(what, tuple(found), None, f"not found in the source: {what} or its Kept entry")
    commit, why, uncommitted = last_commit(repo.resolve(), tuple(sorted(found)))
    return Declaration(what, tuple(sorted(found)), commit, why, uncommitted)


# -- whether its rows were measured after it -------------------------------------------------------


@functools.cache
def _is_ancestor(repo: Path, older: str, newer: str) -> bool | None:
    """Whether `older` is `newer` or an ancestor of it; None where either is not in the history."""
    found = _git(repo, "merge-base", "--is-ancestor", older, newer)
    if found is None or found.returncode not in (0, 1):
        return None
    return found.returncode == 0


def standing(declared: Declaration, rows_code: Sequence[str], repo: Path = results.REPO) -> Standing:
    """Whether the declaration predates the rows (`rows_code`: the commits they ran from, as the rows
    record them, "+dirty" and all): before where its commit is each one's or an ancestor of each."""
    named = tuple(c for c in rows_code if c and c not in ("unrecorded", "unknown"))
    if declared.uncommitted:
        return Standing(NEWER, None, named, declared.why)
    if declared.commit is None:
        return Standing(UNKNOWN, None, named, declared.why)
    if not named or len(named) != len(rows_code):
        return Standing(UNKNOWN, declared.commit, named, "its rows do not all name the commit they ran from")
    after = [_is_ancestor(repo.resolve(), declared.commit, c.removesuffix("+dirty")) for c in named]
    if any(a is None for a in after):
        return Standing(UNKNOWN, declared.commit, named, "a commit of its rows is not in this history")
    return Standing(BEFORE if all(after) else NEWER, declared.commit, named)
