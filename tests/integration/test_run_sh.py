"""What run.sh leaves on the machine: Debian's own apache2 service stays off if run.sh installed it."""

from pathlib import Path

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root

# run.sh lists there the packages it installed, one a line.
INSTALLED = REPO / ".venv" / ".netrepro-installed"


def installed_by_run_sh() -> set[str]:
    return set(INSTALLED.read_text().split()) if INSTALLED.exists() else set()


def test_debians_apache2_service_is_not_enabled_when_run_sh_installed_apache2() -> None:
    if "apache2" not in installed_by_run_sh():
        pytest.skip(f"run.sh did not install apache2 here ({INSTALLED} does not list it): the user's to keep")
    etc = Path("/etc")
    systemd_links = sorted(str(p) for p in etc.glob("systemd/system/*.target.wants/apache2.service"))
    sysv_starts = sorted(str(p) for p in etc.glob("rc?.d/S*apache2"))
    assert systemd_links == [] and sysv_starts == [], "Debian's apache2 service is enabled"
