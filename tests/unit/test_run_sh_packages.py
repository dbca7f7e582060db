"""run.sh's choice of apt packages, read by sourcing it (sourced, it only defines its functions)."""

import subprocess
from pathlib import Path

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
