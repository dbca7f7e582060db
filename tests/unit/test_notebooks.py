"""The notebooks run: each one's code cells, in order, against the committed results/."""

import json
from pathlib import Path

import matplotlib
import pytest

from ground.results import REPO

NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    matplotlib.use("Agg")
    monkeypatch.chdir(path.parent)
    cells = json.loads(path.read_text())["cells"]
    namespace: dict[str, object] = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), f"{path.name}:{cell['id']}", "exec"), namespace)
    assert "gain" in capsys.readouterr().out
