"""The import contract (pyproject.toml, [tool.importlinter]) holds, and breaks on an import that points up.

Two checks of the same contract: import-linter's (`lint-imports`, which `run.sh
test` runs; it needs Python 3.11), and one read here from the source with
`ast` on any Python the project supports, which also finds a circle of
imports between modules (a room's modules may use one another, never round
a circle, at run time).  Both count every import for the layers: at the top
of a module, inside a function, or for type checking only.
"""

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ground.results import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PACKAGES = ("ground", "topologies", "servers", "kmod", "netrepro", "expts")


# -- the contract, read from the source -----------------------------------------------


def contract_layers(tree: Path = REPO) -> list[list[str]]:
    """The contract's layers, highest first, each a list of its siblings (`a | b`, `a : b`)."""
    doc = tomllib.loads((tree / "pyproject.toml").read_text())
    (contract,) = doc["tool"]["importlinter"]["contracts"]
    return [[name.strip() for name in layer.replace(":", "|").split("|")] for layer in contract["layers"]]


def modules(tree: Path = REPO) -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (tree / package).rglob("*.py"):
            parts = path.relative_to(tree).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _for_type_checking(node: ast.AST) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, runtime_only: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif not (runtime_only and _for_type_checking(node)):
            yield from _imports(node, runtime_only)


def import_graph(tree: Path = REPO, runtime_only: bool = False) -> dict[str, set[str]]:
    """Each project module's imports of project modules (a `from x import y` names x.y where that is one);
    `runtime_only`: not those made for type checking alone (`if TYPE_CHECKING:`)."""
    known = modules(tree)
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in _imports(ast.parse(path.read_text(), str(path)), runtime_only):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                for alias in node.names:
                    targets.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base)
        graph[name] = {t for t in targets if t.split(".")[0] in PACKAGES and t != name}
    return graph


def room_of(module: str, layers: list[list[str]]) -> tuple[int, str] | None:
    """(the module's layer, its sibling there), by the longest name it is under."""
    best: tuple[int, str] | None = None
    for depth, siblings in enumerate(layers):
        for sibling in siblings:
            if (module == sibling or module.startswith(sibling + ".")) and (
                best is None or len(sibling) > len(best[1])
            ):
                best = (depth, sibling)
    return best


def breaches(tree: Path = REPO) -> list[str]:
    """Every import that points up a layer, or across to an independent sibling (`a | b`)."""
    layers = contract_layers(tree)
    independent = {s for layer, raw in zip(layers, _raw_layers(tree), strict=False) if "|" in raw for s in layer}
    found = []
    for module, targets in sorted(import_graph(tree).items()):
        here = room_of(module, layers)
        for target in sorted(targets):
            there = room_of(target, layers)
            if here is None or there is None or here[1] == there[1]:
                continue
            if there[0] < here[0] or (there[0] == here[0] and here[1] in independent):
                found.append(f"{module} -> {target}")
    return found


def _raw_layers(tree: Path) -> list[str]:
    doc = tomllib.loads((tree / "pyproject.toml").read_text())
    return list(doc["tool"]["importlinter"]["contracts"][0]["layers"])


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in graph:
                    continue
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(sorted(group))
    return found


def test_every_import_keeps_to_the_layers_read_from_the_source() -> None:
    assert breaches() == []


def test_no_module_imports_itself_round_a_circle() -> None:
    """At run time.  For type checking alone a claim, and the test that decides it, name the figure they
    read, which holds its claims (netrepro.studykit.claims, .decisions and .spec): the one such circle,
    and it must stay the only one."""
    assert circles(import_graph(runtime_only=True)) == []
    assert circles(import_graph()) == [
        ["netrepro.studykit.claims", "netrepro.studykit.decisions", "netrepro.studykit.spec"]
    ]


def test_the_circle_finder_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


# -- the same contract, by import-linter ----------------------------------------------


def lint_imports() -> Path:
    if sys.version_info < (3, 11):
        pytest.skip("import-linter 2.16 needs Python 3.11; the check above reads the same contract")
    found = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(found).exists():
        pytest.fail("lint-imports is not installed: run.sh installs the project's [dev] extras")
    return Path(found)


def copy_of_the_tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    for name in PACKAGES:
        shutil.copytree(REPO / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.o", "*.ko", "build"))
    shutil.copy(REPO / "pyproject.toml", tree / "pyproject.toml")
    return tree


def check(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(lint_imports()), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_layers_hold(tmp_path: Path) -> None:
    done = check(copy_of_the_tree(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 kept, 0 broken" in done.stdout


UPWARD = [
    ("ground/units.py", "from netrepro.runner import sweep", "ground.units -> netrepro.runner.sweep"),
    ("servers/content.py", "from topologies import lab", "servers.content -> topologies.lab"),  # siblings
    ("kmod/loader.py", "import expts", "kmod.loader -> expts"),
    ("netrepro/studykit/spec.py", "import expts.iw", "netrepro.studykit.spec -> expts.iw"),
    ("expts/iw.py", "from netrepro.runner import workloads", "expts.iw -> netrepro.runner.workloads"),
    ("netrepro/runner/sweep.py", "from netrepro.engine import cluster",
     "netrepro.runner.sweep -> netrepro.engine.cluster"),
    ("netrepro/engine/worker.py", "from netrepro.front import cli", "netrepro.engine.worker -> netrepro.front.cli"),
]  # fmt: skip


@pytest.mark.parametrize(("module", "wrong", "breach"), UPWARD)
def test_an_import_that_points_up_breaks_them(tmp_path: Path, module: str, wrong: str, breach: str) -> None:
    tree = copy_of_the_tree(tmp_path)
    target = tree / module
    target.write_text(target.read_text() + f"\n{wrong}  # a deliberate breach\n")
    assert breaches(tree) == [breach]
    if sys.version_info < (3, 11):
        return  # import-linter needs 3.11: the source's own check above is the one there
    done = check(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout and module.removesuffix(".py").replace("/", ".") in done.stdout


def test_the_checkout_is_found_in_one_place() -> None:
    """Only ground.results derives the checkout's root from its own file: a module that did so itself
    pointed into netrepro/ once it moved a room deeper (the stock-kernel lane built kmod/ there)."""
    found = [
        str(path.relative_to(REPO))
        for name in PACKAGES
        for path in (REPO / name).rglob("*.py")
        if "__file__).resolve().parent.parent" in path.read_text()
    ]
    assert found == ["ground/results.py"]
