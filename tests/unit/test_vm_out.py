"""The stock-kernel lane shares --out with the guest: the argument logic, without booting."""

import os
from pathlib import Path

import pytest

from ground import results
from netrepro.lanes import vm

REPO = Path("/srv/netrepro")
KERNEL = vm.StockKernel("6.1.0-56-amd64", Path("/boot/vmlinuz-6.1.0-56-amd64"), Path("/usr/src/h"))


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "spdy/betatable", "--out", "/tmp/x"], [(3, "/tmp/x", "")]),
        (["spdy/betatable", "--out=/tmp/x", "--quick"], [(1, "/tmp/x", "--out=")]),
        (["check", "--rtt", "50ms"], []),
        (["run", "fig2", "--out"], []),  # no value: the guest's argparse says so
        (["test", "tests/guest", "--out", "/tmp/x"], []),  # pytest's arguments, not netrepro's
        (["bench", "runner", "--out", "a", "--out=b"], [(3, "a", ""), (4, "b", "--out=")]),
        (["fig2", "--ou", "a", "--o=b"], [(2, "a", ""), (3, "b", "--o=")]),  # argparse's prefixes
        (["fig2", "--outer", "a", "--set", "out=b"], []),
    ],
)
def test_out_options_found_in_both_spellings(args: list[str], expected: list[tuple[int, str, str]]) -> None:
    assert vm.out_options(args) == expected


def test_an_out_outside_the_repository_is_shared_and_passed_absolute(tmp_path: Path) -> None:
    args, shared = vm.share_out_dirs(["spdy/betatable", "--out", "res"], cwd=tmp_path, repo=REPO)
    assert args == ["spdy/betatable", "--out", str(tmp_path / "res")]
    assert shared == {tmp_path / "res": "res"}


def test_the_joined_spelling_keeps_its_form(tmp_path: Path) -> None:
    args, shared = vm.share_out_dirs(["fig2", f"--out={tmp_path}/r"], cwd=Path("/"), repo=REPO)
    assert args == ["fig2", f"--out={tmp_path}/r"]
    assert list(shared) == [tmp_path / "r"]


def test_an_out_inside_the_repository_is_made_absolute_but_not_shared_again() -> None:
    args, shared = vm.share_out_dirs(["fig2", "--out", "results/x"], cwd=REPO, repo=REPO)
    assert args == ["fig2", "--out", str(REPO / "results/x")]
    assert shared == {}


def test_an_out_through_a_link_is_shared_where_the_link_points(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    args, shared = vm.share_out_dirs(["fig2", "--out", str(tmp_path / "link" / "r")], cwd=Path("/"), repo=REPO)
    assert args[-1] == str(tmp_path / "real" / "r")
    assert list(shared) == [tmp_path / "real" / "r"]


@pytest.mark.parametrize(
    ("typed", "why"),
    [
        ("/", "root of the host"),
        ("/proc/x", "its own /proc"),
        ("/sys", "its own /sys"),
        ("/dev/shm/r", "its own /dev"),
        ("/run/user/1000/r", "its own /run"),
        ("/srv/my results", "letters, digits"),
        ("/srv/a=b", "letters, digits"),
        ("/srv/a,b", "letters, digits"),
    ],
)
def test_an_out_that_cannot_be_shared_is_refused_naming_what_was_typed(typed: str, why: str) -> None:
    with pytest.raises(vm.VmError) as refused:
        vm.share_out_dirs(["fig2", "--out", typed], cwd=Path("/"), repo=REPO)
    assert f"--out {typed}:" in str(refused.value)
    assert why in str(refused.value)


def test_vng_argv_shares_the_repository_and_each_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vm, "vng", lambda: "/venv/bin/vng")
    argv = vm.vng_argv(KERNEL, "tcg", ["env", "A=1", "python", "-m", "netrepro"], [Path("/tmp/r")])
    assert argv[:7] == ["/venv/bin/vng", "--run", str(KERNEL.image), "--cpus", "2", "--memory", "2G"]
    checkout = results.REPO  # the checkout's root, whatever room vm.py sits in (before: netrepro/, kmod/ not in it)
    assert argv[7:13] == ["--rwdir", str(checkout), "--rwdir", "/tmp/r", "--cwd", str(checkout)]
    assert (checkout / "run.sh").is_file() and (checkout / "kmod").is_dir()
    assert argv[13:] == ["--disable-kvm", "--exec", "env A=1 python -m netrepro"]


def test_make_out_dir_creates_the_missing_parts_for_the_sudo_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    chowned: list[tuple[str, int, int, bool]] = []
    monkeypatch.setenv("SUDO_UID", "1234")
    monkeypatch.setenv("SUDO_GID", "1235")
    monkeypatch.setattr(
        os, "chown", lambda p, u, g, follow_symlinks=True: chowned.append((str(p), u, g, follow_symlinks))
    )
    vm.make_out_dir(tmp_path / "a" / "b", "a/b")
    assert (tmp_path / "a" / "b").is_dir()
    assert chowned == [(str(tmp_path / "a"), 1234, 1235, False), (str(tmp_path / "a" / "b"), 1234, 1235, False)]


def test_make_out_dir_refuses_a_file_in_the_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUDO_UID", raising=False)
    (tmp_path / "f").write_text("")
    with pytest.raises(vm.VmError, match=r"--out f/r: .* is not a directory"):
        vm.make_out_dir(tmp_path / "f" / "r", "f/r")


def test_make_out_dir_leaves_an_existing_directory_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUDO_UID", "1234")
    monkeypatch.setattr(os, "chown", lambda *a, **k: pytest.fail("chowned a directory it did not make"))
    before = os.stat(tmp_path)
    vm.make_out_dir(tmp_path, str(tmp_path))
    assert os.stat(tmp_path) == before
