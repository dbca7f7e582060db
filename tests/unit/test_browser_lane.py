"""The browser lane without a lab: a load's metrics from captured Chromium timings, its argument list,
the key it trusts, the DevTools pipe, pages found through dependencies, and the refusals before a run."""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import struct
import subprocess
import sys
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.errors import SetupError, UserError
from ground.results import REFERENCE
from kmod import loader
from netrepro.runner import manifest, preflight
from servers import browser, content, devtools
from servers.clients import ProtocolMismatch, WorkloadError
from topologies import emulation

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def captured(name: str) -> dict[str, Any]:
    """A load of a 9x5KB+deps page (12 objects, 45,853 body bytes) through a 10 Mbit/s, 50 ms path, as
    Chromium 156 reported it: its Navigation and Resource Timing entries and DevTools' responses."""
    data: dict[str, Any] = json.loads((FIXTURES / f"chromium_9x5KB_deps_{name}.json").read_text())
    return data


def load_of(data: dict[str, Any], protocol: str | None = None, resources: int | None = 12) -> browser.BrowserLoad:
    return browser.browser_load(
        data["browser"], data["version"], data["timing"], data["received"], protocol or data["protocol"], resources
    )


@pytest.mark.parametrize(("name", "connections"), [("h2", 1), ("h1", 6)])
def test_a_load_is_measured_from_the_html_request_to_the_last_object(name: str, connections: int) -> None:
    data = captured(name)
    load = load_of(data)
    entries = [*data["timing"]["nav"], *data["timing"]["res"]]
    first = data["timing"]["nav"][0]["requestStart"]
    assert load.plt_ms == round(max(e["responseEnd"] for e in entries) - first, 3)
    assert load.onload_ms == round(data["timing"]["nav"][0]["loadEventEnd"], 3) > load.plt_ms
    assert (load.objects, load.bytes) == (12, 45_853)
    assert load.connections == connections  # HTTP/2: one; HTTP/1.1: the browser's six per host
    assert load.negotiated == data["protocol"] and load.version.startswith("156.")


def test_the_browsers_own_favicon_request_is_not_the_pages() -> None:
    data = copy.deepcopy(captured("h1"))
    server = data["timing"]["nav"][0]["name"].split("/")[2]
    late = max(e["responseEnd"] for e in data["timing"]["res"]) + 50
    favicon = {**data["timing"]["res"][0], "name": f"https://{server}/favicon.ico", "responseStatus": 404}
    data["timing"]["res"].append({**favicon, "responseEnd": late, "encodedBodySize": 196})
    data["received"].append({"response": {"url": favicon["name"], "connectionId": 999, "status": 404}})
    assert load_of(data) == load_of(captured("h1"))  # 12 objects, their bytes, their time, six connections


def test_another_protocol_than_asked_fails_the_load() -> None:
    with pytest.raises(ProtocolMismatch, match="asked for http/1.1, negotiated h2"):
        load_of(captured("h2"), "http/1.1")


def test_an_object_not_loaded_whole_fails_the_load() -> None:
    data = copy.deepcopy(captured("h2"))
    data["timing"]["res"][3]["responseStatus"] = 404
    with pytest.raises(WorkloadError, match=r"1 objects not loaded with status 200: https://.*/img-\d+\.png \(404\)"):
        load_of(data)
    with pytest.raises(WorkloadError, match="12 objects loaded, the page has 13"):
        load_of(captured("h2"), resources=13)


def test_the_browser_reaches_nothing_but_the_server_and_opens_no_port() -> None:
    argv = browser.chromium_argv(Path("/p"), "10.0.0.2", "h2", "KEY=")
    assert argv[0] == "/usr/lib/chromium/chromium"  # not the /usr/bin wrapper, which adds flags
    assert "--remote-debugging-pipe" in argv and not any(a.startswith("--remote-debugging-port") for a in argv)
    assert "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 10.0.0.2" in argv
    assert {"--disable-quic", "--disable-background-networking", "--user-data-dir=/p"} <= set(argv)
    assert "--ignore-certificate-errors-spki-list=KEY=" in argv and "--disable-http2" not in argv
    assert "--disable-http2" in browser.chromium_argv(Path("/p"), "10.0.0.2", "http/1.1", "KEY=")
    with pytest.raises(ValueError, match="'h2c': a browser loads over TLS"):
        browser.chromium_argv(Path("/p"), "10.0.0.2", "h2c", "KEY=")


def test_the_trusted_key_hash_is_openssls(tmp_path: Path) -> None:
    cert, key = tmp_path / "c.pem", tmp_path / "k.pem"
    made = ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=t"]
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", *made],
        check=True,
        capture_output=True,
    )
    public = subprocess.run(["openssl", "x509", "-pubkey", "-noout", "-in", str(cert)], check=True, capture_output=True)
    der = subprocess.run(["openssl", "pkey", "-pubin", "-outform", "der"], input=public.stdout, capture_output=True)
    digest = subprocess.run(["openssl", "dgst", "-sha256", "-binary"], input=der.stdout, capture_output=True)
    expected = subprocess.run(["openssl", "base64"], input=digest.stdout, capture_output=True).stdout.decode().strip()
    assert browser.spki_hash(cert.read_bytes()) == expected


def test_the_pipe_reaches_the_browser_at_descriptors_3_and_4() -> None:
    to_child_r, to_child_w = os.pipe()
    from_child_r, from_child_w = os.pipe()
    echo = "import os; os.write(4, os.read(3, 100)[::-1])"
    child = subprocess.Popen(
        devtools.pipe_argv(to_child_r, from_child_w, [sys.executable, "-c", echo]), pass_fds=(to_child_r, from_child_w)
    )
    os.close(to_child_r)
    os.close(from_child_w)
    os.write(to_child_w, b"abc")
    assert os.read(from_child_r, 100) == b"cba"
    assert child.wait(10) == 0
    for fd in (to_child_w, from_child_r):
        os.close(fd)


def fake_browser(replies: list[bytes]) -> tuple[devtools.DevTools, threading.Thread, list[dict[str, Any]]]:
    """A DevTools client whose browser reads one command and writes `replies` (messages ended by NUL)."""
    commands_r, commands_w = os.pipe()
    replies_r, replies_w = os.pipe()
    seen: list[dict[str, Any]] = []

    def browser_side() -> None:
        seen.append(json.loads(os.read(commands_r, 4096).rstrip(b"\0")))
        for reply in replies:
            os.write(replies_w, reply)
        os.close(replies_w)
        os.close(commands_r)

    thread = threading.Thread(target=browser_side)
    thread.start()
    return devtools.DevTools(commands_w, replies_r, "fake"), thread, seen


def test_a_reply_is_told_from_the_events_around_it() -> None:
    event = json.dumps({"method": "Page.loadEventFired", "sessionId": "S", "params": {}}).encode() + b"\0"
    reply = json.dumps({"id": 1, "result": {"frameId": "F"}}).encode()
    client, thread, seen = fake_browser([event + reply[:10], reply[10:] + b"\0"])  # split across reads
    assert client.call("Page.navigate", {"url": "u"}, session="S") == {"frameId": "F"}
    assert seen == [{"id": 1, "method": "Page.navigate", "params": {"url": "u"}, "sessionId": "S"}]
    assert client.wait_event("Page.loadEventFired", session="S")["sessionId"] == "S"
    with pytest.raises(devtools.DevToolsError, match="fake is gone"):
        client.wait_event("Page.loadEventFired", timeout=5)
    thread.join()
    client.close()


def test_an_error_reply_or_silence_is_a_devtools_error() -> None:
    client, thread, _ = fake_browser([b'{"id": 1, "error": {"code": -32000, "message": "no target"}}\0'])
    with pytest.raises(devtools.DevToolsError, match="Target.attachToTarget failed: no target"):
        client.call("Target.attachToTarget")
    thread.join()
    client.close()
    silent_r, silent_w = os.pipe()
    sink_r, sink_w = os.pipe()
    client = devtools.DevTools(sink_w, silent_r, "fake")
    with pytest.raises(devtools.DevToolsError, match="the reply to Browser.getVersion did not come within 0.2 s"):
        client.call("Browser.getVersion", timeout=0.2)
    client.close()
    for fd in (silent_w, sink_r):
        os.close(fd)


def test_a_page_with_dependencies_reaches_every_object_once_by_three_routes(tmp_path: Path) -> None:
    spec = content.page_spec(" 9x5KB+deps")
    assert (spec.name, spec.objects, spec.deps) == ("9x5KB+deps", 9, True)
    assert content.page_spec("small+deps").objects == 30 and not content.page_spec("small").deps
    page = content.write_page(tmp_path, "9x5KB+deps")
    html, css, js = ((tmp_path / "9x5KB+deps" / f).read_text() for f in ("index.html", "style.css", "script.js"))
    images = [o.path for o in page.objects if o.path.endswith(".png")]
    routes = [re.findall(r"/9x5KB\+deps/img-\d+\.png", text) for text in (html, css, js)]
    assert [len(r) for r in routes] == [3, 3, 3] and sorted(p for r in routes for p in r) == sorted(images)
    assert [o.path for o in page.resources[:3]] == [
        f"/9x5KB+deps/{f}" for f in ("index.html", "style.css", "script.js")
    ]
    assert page.total_bytes == sum((tmp_path / o.path.lstrip("/")).stat().st_size for o in page.resources)
    with pytest.raises(ValueError, match=r"a page \+deps has at least 3 objects"):
        content.page_spec("2x1KB+deps")


def png_chunks(data: bytes) -> list[bytes]:
    """The chunk types of a PNG, each chunk's CRC checked."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    kinds, at = [], 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        assert struct.unpack(">I", data[at + 8 + length : at + 12 + length])[0] == zlib.crc32(kind + body)
        kinds.append(kind)
        at += 12 + length
    assert at == len(data)
    return kinds


def test_an_object_of_a_page_is_a_whole_png_of_exactly_its_size() -> None:
    for size in (content.PNG_OVERHEAD, 800, 1_200_000):
        body = content.image_body(size, "/p/img-01.png")
        assert len(body) == size and png_chunks(body) == [b"IHDR", b"raNd", b"IDAT", b"IEND"]
    assert content.image_body(1_000, "a") != content.image_body(1_000, "b")  # bodies differ by path
    assert len(content.image_body(10, "x")) == 10  # too small for a PNG: random bytes


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preflight, "is_root", lambda: True)
    monkeypatch.setattr(preflight, "on_path", lambda tool: True)
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(emulation, "choose_backend", lambda requested: "netem")
    monkeypatch.setattr(loader, "loadable", lambda name, requested=None: requested or "bpf")


def test_a_browser_with_http2_in_cleartext_is_refused_before_anything_is_built(machine: None) -> None:
    fig = expts.find("web/plt")
    grid = [*fig.grid(True), {**fig.grid(True)[0], "protocol": "h2c"}]
    with pytest.raises(UserError, match="client=chromium with protocol=h2c: a browser speaks HTTP/2 only over TLS"):
        preflight.figure_needs(fig, grid, {}, "auto", None)


def test_a_missing_browser_is_a_setup_error_saying_where_to_get_it(
    machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(browser.BROWSERS, "chromium", tmp_path / "no-chromium")
    fig = expts.find("web/plt")
    needs = preflight.figure_needs(fig, fig.grid(True), {}, "auto", None)
    with pytest.raises(SetupError, match="client=chromium runs .*no-chromium.*Debian's package `chromium`.*snap"):
        preflight.check_machine(needs)


def test_a_figure_derived_by_its_client_is_drawn_beside_the_declared_reference(tmp_path: Path) -> None:
    fig = expts.find("cubicplus/fig6")
    derived = fig.derive({"client": "chromium"})
    reference = manifest.reference_of(derived, tmp_path)
    assert reference is not None and reference.csv.name == "fig3.csv"  # fig6 plots fig3's trials
    assert "reference of cubicplus/fig6 as declared (client h2load), beside client=chromium" in reference.of
    stored = {row["series"] for row in csv.DictReader(reference.csv.open()) if row["status"] == "ok"}
    assert {p.series for p in reference.points} == stored & {s.label for s in fig.series}
    other = fig.derive({"client": "chromium", "rtt": "50ms"})
    assert manifest.reference_of(other, tmp_path) is None  # another path: not the reference's trials
    twin = derived.unvaried()  # client=chromium+variation=none: beside h2load's twin, fig6@variation=none
    assert twin is not None and (beside := manifest.reference_of(twin, tmp_path)) is not None
    assert beside.csv == REFERENCE / "cubicplus" / "fig6@variation=none" / "fig6.csv"
    assert "reference of cubicplus/fig6@variation=none as declared (client h2load)" in beside.of
