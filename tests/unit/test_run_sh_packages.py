"""run.sh's choice of apt packages, read by sourcing it (sourced, it only defines its functions)."""

import subprocess
from pathlib import Path

import pytest

from ground.results import REPO


def missing_packages(tmp_path: Path, asked: list[str], installed: set[str], in_archive: set[str]) -> list[str]:
    """run.sh's missing_packages, with dpkg-query, apt-cache and uname answered by fakes."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fakes = {
        # dpkg-query -W -f=... NAME
        "dpkg-query": f'case " {" ".join(sorted(installed))} " in *" ${{@: -1}} "*) printf "install ok installed";; '
        "*) exit 1;; esac",
        "apt-cache": f'case " {" ".join(sorted(in_archive))} " in *" $2 "*) exit 0;; *) exit 100;; esac',
        "uname": "echo 6.18.0-test",
    }
    for name, body in fakes.items():
        (bin_ / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_ / name).chmod(0o755)
    script = 'source "$1"; shift; missing_packages "$@"'
    done = subprocess.run(
        ["bash", "-c", script, "bash", str(REPO / "run.sh"), *asked],
        env={"PATH": f"{bin_}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.split()


def test_only_what_is_missing_is_chosen_with_the_headers_the_archive_has(tmp_path: Path) -> None:
    chosen = missing_packages(
        tmp_path,
        ["iperf3", "apache2", "curl", "ethtool"],
        installed={"iperf3", "curl"},
        in_archive={"linux-headers-amd64"},  # none for this (custom) kernel
    )
    assert chosen == ["apache2", "ethtool", "linux-headers-amd64"]


def test_nothing_is_chosen_when_all_is_installed(tmp_path: Path) -> None:
    everything = {"apache2", "linux-headers-6.18.0-test", "linux-headers-amd64"}
    assert missing_packages(tmp_path, ["apache2"], everything, everything) == []


def test_sourcing_run_sh_runs_nothing(tmp_path: Path) -> None:
    done = subprocess.run(
        ["bash", "-c", 'source "$1"; echo sourced', "bash", str(REPO / "run.sh")],
        capture_output=True,
        text=True,
        check=False,
        timeout=10,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "sourced\n", "")


# The os-release files of the distributions netrepro is tested on, as they ship (the lines run.sh reads).
OS_RELEASE = {
    "debian 12": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n'
    'VERSION="12 (bookworm)"\nVERSION_CODENAME=bookworm\nID=debian\n',
    "ubuntu 22.04": 'PRETTY_NAME="Ubuntu 22.04.4 LTS"\nNAME="Ubuntu"\nVERSION_ID="22.04"\n'
    'VERSION="22.04.4 LTS (Jammy Jellyfish)"\nVERSION_CODENAME=jammy\nID=ubuntu\nID_LIKE=debian\n',
    "ubuntu 24.04": 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\n'
    'VERSION="24.04.1 LTS (Noble Numbat)"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n',
}


def chosen(tmp_path: Path, os_release: str, release: str, which: str) -> subprocess.CompletedProcess[str]:
    """run.sh's distribution and distro_packages for this os-release file and kernel release."""
    (tmp_path / "os-release").write_text(os_release)
    script = 'source "$1"; distro_packages "$(distribution "$2")" "$3" "$4"'
    return subprocess.run(
        ["bash", "-c", script, "bash", str(REPO / "run.sh"), str(tmp_path / "os-release"), release, which],
        capture_output=True, text=True, check=False, timeout=10,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("distro", "release", "main", "vm"),
    [
        (
            "debian 12",
            "6.1.0-28-amd64",
            ["bpftool", "chromium", "firefox-esr"],
            ["linux-image-amd64", "linux-headers-amd64"],
        ),
        # EC2's Ubuntu images run the aws kernel flavour: bpftool is in that release's linux-tools
        ("ubuntu 22.04", "6.8.0-1015-aws", ["linux-tools-common", "linux-tools-6.8.0-1015-aws"],
         ["linux-image-generic", "linux-headers-generic"]),
        ("ubuntu 24.04", "6.8.0-45-generic", ["linux-tools-common", "linux-tools-6.8.0-45-generic"],
         ["linux-image-generic", "linux-headers-generic"]),
    ],
)  # fmt: skip
def test_the_package_names_of_each_tested_distribution(
    tmp_path: Path, distro: str, release: str, main: list[str], vm: list[str]
) -> None:
    for which, names in (("main", main), ("vm", vm)):
        done = chosen(tmp_path, OS_RELEASE[distro], release, which)
        assert (done.returncode, done.stdout.split(), done.stderr) == (0, names, "")


def test_an_untested_version_is_warned_of_and_an_other_distribution_refused(tmp_path: Path) -> None:
    trixie = OS_RELEASE["debian 12"].replace('VERSION_ID="12"', 'VERSION_ID="13"')
    done = chosen(tmp_path, trixie, "6.12.0-1-amd64", "main")
    assert done.returncode == 0 and done.stdout.split() == ["bpftool", "chromium", "firefox-esr"]
    assert "tested on Debian 12 and Ubuntu 22.04 and 24.04; this is 'debian 13'" in done.stderr
    fedora = 'NAME="Fedora Linux"\nVERSION_ID=40\nID=fedora\n'
    done = chosen(tmp_path, fedora, "6.8.5-301.fc40.x86_64", "main")
    assert done.returncode == 1 and done.stdout == "" and "'fedora 40' is neither Debian nor Ubuntu" in done.stderr
