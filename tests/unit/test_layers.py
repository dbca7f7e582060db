"""The import contract (pyproject.toml, [tool.importlinter]) holds, and breaks on an import that points up."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ground.results import REPO

PACKAGES = ("ground", "topologies", "servers", "kmod", "netrepro", "expts")


def lint_imports() -> Path:
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


@pytest.mark.parametrize(
    ("module", "wrong"),
    [
        ("ground/units.py", "from netrepro import sweep"),  # the ground calling up to the runner
        ("servers/content.py", "from topologies import lab"),  # a domain folder using its sibling
        ("kmod/loader.py", "import expts"),
    ],
)
def test_an_import_that_points_up_breaks_them(tmp_path: Path, module: str, wrong: str) -> None:
    tree = copy_of_the_tree(tmp_path)
    target = tree / module
    target.write_text(target.read_text() + f"\n{wrong}  # a deliberate breach\n")
    done = check(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "BROKEN" in done.stdout and module.removesuffix(".py").replace("/", ".") in done.stdout
