"""Client command builders, the page-load plan and the protocol checks."""

from pathlib import Path

import pytest

from ground.proc import ROOT, CommandError
from servers import clients
from servers.clients import (
    ProtocolMismatch,
    WorkloadError,
    check_h2load,
    curl_argv,
    h2load_argv,
    page_load_plan,
    url,
)
from servers.content import Page, WebObject
from servers.parsers import parse_h2load

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def small_page() -> Page:
    objects = tuple(WebObject(f"/small/img-{i:02d}.jpg", 5_000) for i in range(1, 31))
    return Page("small", WebObject("/small/index.html", 1_486), objects)


def test_urls() -> None:
    assert url("10.0.0.2", "/a", "h2c") == "http://10.0.0.2:80/a"
    assert url("10.0.0.2", "/a", "http/1.1") == "http://10.0.0.2:80/a"
    assert url("10.0.0.2", "/a", "h2") == "https://10.0.0.2:443/a"
    with pytest.raises(ValueError):
        url("10.0.0.2", "/a", "spdy")


def test_curl_per_protocol(tmp_path: Path) -> None:
    assert "--http2-prior-knowledge" in curl_argv("http://s/a", "h2c")
    assert "--http1.1" in curl_argv("http://s/a", "http/1.1")
    tls = curl_argv("https://s/a", "h2", cacert=tmp_path / "c.pem")
    assert "--http2" in tls and tls[tls.index("--cacert") + 1] == str(tmp_path / "c.pem")
    assert tls[-1] == "https://s/a" and tls[tls.index("-w") + 1] == "%{json}"


def test_h2load_page_over_http2() -> None:
    argv = h2load_argv(["http://s/i.html", "http://s/1.jpg"], "h2c", max_streams=2, log_file=Path("/r/l"))
    assert argv == [
        "h2load",
        "-c",
        "1",
        "-m",
        "2",
        "-n",
        "2",
        "--log-file",
        "/r/l",
        "http://s/i.html",
        "http://s/1.jpg",
    ]


def test_h2load_bulk() -> None:
    h1 = h2load_argv(["http://s/big"], "http/1.1", clients=6, requests=6)
    assert h1 == ["h2load", "-c", "6", "-m", "1", "-n", "6", "--h1", "http://s/big"]
    h2 = h2load_argv(["http://s/big"], "h2c", duration_s=2.5, window_bits=30, connection_window_bits=30)
    assert h2 == ["h2load", "-c", "1", "-m", "1", "-D", "2500ms", "-w", "30", "-W", "30", "http://s/big"]


def test_page_plan_http2_one_connection() -> None:
    (share,) = page_load_plan(small_page(), "h2")
    assert share[0].path == "/small/index.html" and len(share) == 31


def test_page_plan_http1_six_connections() -> None:
    plan = page_load_plan(small_page(), "http/1.1")
    assert len(plan) == 6
    assert plan[0][0].path == "/small/index.html"  # the HTML first, on the first connection
    assert sorted(len(s) for s in plan) == [5, 5, 5, 5, 5, 6]
    assert sorted(o.path for s in plan for o in s) == sorted(r.path for r in small_page().resources)


def test_page_plan_fewer_objects_than_connections() -> None:
    page = Page("p", WebObject("/i.html", 10), (WebObject("/a", 1), WebObject("/b", 1)))
    assert [len(s) for s in page_load_plan(page, "http/1.1")] == [2, 1]


def test_protocol_check_catches_a_fallback() -> None:
    fallback = parse_h2load((FIXTURES / "h2load_fallback_h2_to_h1.txt").read_text())
    with pytest.raises(ProtocolMismatch, match="asked for h2, negotiated http/1.1"):
        check_h2load(fallback, "h2", 1, "test")
    check_h2load(fallback, "http/1.1", 1, "test")


def test_protocol_check_catches_failed_requests() -> None:
    failed = parse_h2load((FIXTURES / "h2load_h2c_refused_by_h1_server.txt").read_text())
    with pytest.raises(WorkloadError, match="0 of 1 requests succeeded"):
        check_h2load(failed, "h2c", 1, "test")
    ok = parse_h2load((FIXTURES / "h2load_small_h2c.txt").read_text())
    check_h2load(ok, "h2c", 31, "test")
    with pytest.raises(WorkloadError):
        check_h2load(ok, "h2c", 32, "test")


def test_commands_start_together(tmp_path: Path) -> None:
    assert clients.barrier_argv(tmp_path / "l", ["h2load", "x"]) == [
        "flock", "--shared", "--no-fork", str(tmp_path / "l"), "h2load", "x",
    ]  # fmt: skip
    outs = clients._run_together([["echo", "a"], ["echo", "b"]], ROOT, None, tmp_path, timeout=10)
    assert outs == ["a\n", "b\n"]
    with pytest.raises(CommandError, match="exited 1"):
        clients._run_together([["true"], ["false"]], ROOT, None, tmp_path, timeout=10)
