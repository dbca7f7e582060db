"""`run.sh report` on the stored results, read back in a real browser (Debian's headless Chromium).

The page must show every figure of `run.sh list` that has a stored result,
with its image (loaded: the page's own count, read from the DOM after its
scripts ran) and its verdict; it must fetch nothing from elsewhere; a
screenshot of it must not be blank.  A second test reads the verdicts off
the page and fails for a figure without one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import expts
from ground.results import REFERENCE, REPO
from netrepro.runner.plan import Stored
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import ByDesign

pytestmark = pytest.mark.root

BROWSER = shutil.which("chromium")
VERDICTS = ("agrees", "deterministic", "partly", "differs", "undecided")


def chromium(tmp_path: Path, *argv: str) -> str:
    if BROWSER is None:
        if "ubuntu" in Path("/etc/os-release").read_text().lower():
            pytest.skip("Ubuntu ships Chromium as a snap only; run.sh does not install it there")
        pytest.fail("no chromium: run.sh installs it (Debian's package)")
    done = subprocess.run(
        [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         f"--user-data-dir={tmp_path / 'chromium'}", "--virtual-time-budget=10000", *argv],
        capture_output=True, text=True, timeout=120, check=True,
        # its home too: Chromium writes there (.config/chromium, .cache/dconf) whatever its profile
        env={**os.environ, "HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home/.config"),
             "XDG_CACHE_HOME": str(tmp_path / "home/.cache")},
    )  # fmt: skip
    return done.stdout


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "index.html"
    subprocess.run([sys.executable, "-m", "netrepro", "report", "--out", str(out)], cwd=REPO, check=True,
                   capture_output=True, timeout=300)  # fmt: skip
    return out


def with_stored_result() -> list[str]:
    return [f.full_name for f in expts.with_kept() if Stored.of(f) is not None]


def test_every_stored_figure_is_on_the_page_with_its_image_and_verdict(report: Path, tmp_path: Path) -> None:
    text = report.read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched from elsewhere
    dom = chromium(tmp_path, "--dump-dom", report.as_uri())
    shown = dict(re.findall(r'data-figure="([^"]+)" data-verdict="([^"]+)"', dom))
    assert sorted(shown) == sorted(with_stored_result())
    loaded = re.search(r'data-images-loaded="(\d+)"', dom)
    images = re.search(r'data-images="(\d+)"', dom)
    assert loaded and images and int(loaded[1]) == int(images[1]) == len(shown), (loaded, images)

    shot = tmp_path / "page.png"
    chromium(tmp_path, "--window-size=1280,1600", f"--screenshot={shot}", report.as_uri())
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.std() > 0.05, "the screenshot is blank"


def counted_claims(name: str) -> list[Claim]:
    """The claims a figure's verdict counts: not set true by design, not checks of the setup."""
    return [
        c
        for c in {f.full_name: f for f in expts.with_kept()}[name].claims
        if not c.check and not (isinstance(c.test, ByDesign) and c.test.forced == "holds")
    ]


def test_every_figure_on_the_page_has_a_verdict(report: Path) -> None:
    shown = dict(re.findall(r'data-figure="([^"]+)" data-verdict="([^"]+)"', report.read_text()))
    assert shown
    # unjudged only where the figure declares no claim of its source that its setup does not decide (the page
    # says so, or shows the claims set by design)
    without = {name: v for name, v in shown.items() if v not in VERDICTS and counted_claims(name)}
    assert not without, f"figures without a verdict: {without} (re-plot them: run.sh FIG --plot-only --out {REFERENCE})"
