"""Per-host TCP settings: the commands they become (pure builders)."""

import pytest

from ground.proc import ROOT
from servers.hosttcp import HostTcp, apply_host_tcp, host_tcp_commands, route_argv, sysctl_argv, tcp_rmem_value


def test_route_carries_the_initial_windows() -> None:
    assert route_argv("10.0.0.1", "server-eth0", initcwnd=26) == [
        "ip", "route", "replace", "10.0.0.1/32", "dev", "server-eth0", "initcwnd", "26",
    ]  # fmt: skip
    assert route_argv("10.0.0.2", "client-eth0", initrwnd=64)[-2:] == ["initrwnd", "64"]


def test_server_settings() -> None:
    settings = HostTcp(congestion_control="cubic", initcwnd=10, slow_start_after_idle=False)
    assert host_tcp_commands(settings, "10.0.0.1", "server-eth0") == [
        sysctl_argv("net.ipv4.tcp_congestion_control", "cubic"),
        ["sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1"],
        ["sysctl", "-q", "-w", "net.ipv4.tcp_slow_start_after_idle=0"],
        route_argv("10.0.0.1", "server-eth0", initcwnd=10),
    ]


def test_client_receive_buffer_and_initrwnd() -> None:
    six_fold = 6 * 6_291_456
    commands = host_tcp_commands(HostTcp(receive_buffer=six_fold, initrwnd=100), "10.0.0.2", "client-eth0")
    assert ["sysctl", "-q", "-w", f"net.ipv4.tcp_rmem=4096 131072 {six_fold}"] in commands
    assert commands[-1] == route_argv("10.0.0.2", "client-eth0", initrwnd=100)
    assert tcp_rmem_value(six_fold).split()[-1] == str(six_fold)


def test_nothing_asked_only_metrics_off() -> None:
    assert host_tcp_commands(HostTcp(), "10.0.0.1", "x") == [["sysctl", "-q", "-w", "net.ipv4.tcp_no_metrics_save=1"]]


def test_only_what_changed_is_applied_again() -> None:
    before = HostTcp(congestion_control="cubic", initcwnd=10, slow_start_after_idle=False)
    after = HostTcp(congestion_control="cubic", initcwnd=26, slow_start_after_idle=False)
    assert host_tcp_commands(after, "10.0.0.1", "server-eth0", previous=before) == [
        route_argv("10.0.0.1", "server-eth0", initcwnd=26)
    ]
    assert host_tcp_commands(after, "10.0.0.1", "server-eth0", previous=after) == []
    reno = HostTcp(congestion_control="reno", initcwnd=26, slow_start_after_idle=False)
    assert host_tcp_commands(reno, "10.0.0.1", "server-eth0", previous=after) == [
        sysctl_argv("net.ipv4.tcp_congestion_control", "reno")
    ]


def test_bad_values_refused() -> None:
    with pytest.raises(ValueError, match="initcwnd"):
        HostTcp(initcwnd=0)
    with pytest.raises(ValueError, match="receive_buffer"):
        HostTcp(receive_buffer=1000)


def test_never_the_root_namespace() -> None:
    with pytest.raises(ValueError, match="root namespace"):
        apply_host_tcp(ROOT, HostTcp(initcwnd=10), "10.0.0.1", None)  # type: ignore[arg-type]
