"""What run.sh leaves on the machine: a Debian service of a package run.sh installed stays off."""

from pathlib import Path

import pytest

from ground.results import REPO

pytestmark = pytest.mark.root

# run.sh lists there the packages it installed, one a line.
INSTALLED = REPO / ".venv" / ".netrepro-installed"
# run.sh's SYSTEM_SERVICES: each package whose own service it turns off, and the service
SERVICES = {"apache2": "apache2", "openvswitch-switch": "openvswitch-switch", "openssh-server": "ssh"}


def installed_by_run_sh() -> set[str]:
    return set(INSTALLED.read_text().split()) if INSTALLED.exists() else set()


@pytest.mark.parametrize("package", sorted(SERVICES))
def test_debians_service_is_not_enabled_when_run_sh_installed_its_package(package: str) -> None:
    if package not in installed_by_run_sh():
        pytest.skip(f"run.sh did not install {package} here ({INSTALLED} does not list it): the user's to keep")
    service = SERVICES[package]
    etc = Path("/etc")
    systemd_links = sorted(str(p) for p in etc.glob(f"systemd/system/*.target.wants/{service}.service"))
    sysv_starts = sorted(str(p) for p in etc.glob(f"rc?.d/S*{service}"))
    assert systemd_links == [] and sysv_starts == [], f"Debian's {service} service is enabled"


def test_the_list_above_is_run_shs() -> None:
    text = (REPO / "run.sh").read_text()
    assert "SYSTEM_SERVICES=(" + " ".join(f"{p}:{s}" for p, s in SERVICES.items()) + ")" in text
