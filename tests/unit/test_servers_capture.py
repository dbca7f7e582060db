"""The tcpdump command of the packet capture."""

from pathlib import Path

from servers.capture import tcpdump_argv


def test_capture_command(tmp_path: Path) -> None:
    dump = tcpdump_argv("client-eth0", tmp_path / "c.pcap", 80)
    assert dump[:3] == ["tcpdump", "-i", "client-eth0"] and dump[-3:] == ["tcp", "port", "80"]
    assert "--immediate-mode" in dump
