"""The report reads every stored reference figure: none is left out as unreadable (netrepro.front.report).

`stored` leaves out, with a warning only, a figure whose page or findings
cannot be made (a manifest of another shape, a study module without the
citation the page heads its study with): the page would then simply lack
it.  Here every figure with a stored result must come through.
"""

from pathlib import Path

import expts
from ground.results import REFERENCE
from netrepro.front.report import stored
from netrepro.runner.plan import Stored


def test_every_study_names_its_source() -> None:
    for study in expts.STUDIES:
        assert isinstance(study.SOURCE, str) and study.SOURCE.strip(), study.__name__


def test_every_stored_reference_figure_is_read(tmp_path: Path) -> None:
    # the declared figures, each followed by the derived ones the reference keeps of it (each study's KEPT)
    with_result = [f.full_name for f in expts.with_kept() if Stored.of(f) is not None]
    assert with_result, "no stored reference figure found"
    assert [e.fig.full_name for e in stored(REFERENCE, tmp_path)] == with_result
