"""Firefox in the browser lane without a lab: a load's metrics from captured Firefox timings and sockets, the
profile it loads with (what it reaches, what it trusts), its WebDriver BiDi client on captured messages, and
the refusals before a run."""

from __future__ import annotations

import copy
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import expts
from ground.errors import SetupError, UserError
from ground.proc import ROOT
from kmod import loader
from netrepro.runner import manifest, preflight, workloads
from servers import bidi, browser
from servers.clients import ProtocolMismatch, WorkloadError
from topologies import emulation

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


@pytest.fixture
def machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine that has everything a figure needs (as test_browser_lane's)."""
    monkeypatch.setattr(preflight, "is_root", lambda: True)
    monkeypatch.setattr(preflight, "on_path", lambda tool: True)
    monkeypatch.setattr(preflight, "kernel_congestion_controls", lambda: ["reno", "cubic"])
    monkeypatch.setattr(emulation, "choose_backend", lambda requested: "netem")
    monkeypatch.setattr(loader, "loadable", lambda name, requested=None: requested or "bpf")


def captured(name: str) -> dict[str, Any]:
    """A load of a 9x5KB+deps page (12 objects, 45,853 body bytes) from a server on loopback, as Firefox ESR
    153.8 reported it: its Navigation and Resource Timing entries, and `ss`'s list of the client's connections
    to the server's port at the load event."""
    data: dict[str, Any] = json.loads((FIXTURES / f"firefox_9x5KB_deps_{name}.json").read_text())
    return data


def load_of(data: dict[str, Any], protocol: str | None = None, resources: int | None = 12) -> browser.BrowserLoad:
    return browser.firefox_load(
        data["version"], data["timing"], data["sockets"], protocol or data["protocol"], resources
    )


@pytest.mark.parametrize(("name", "connections"), [("h2", 1), ("h1", 6)])
def test_a_firefox_load_is_measured_from_the_html_request_to_the_last_object(name: str, connections: int) -> None:
    data = captured(name)
    load = load_of(data)
    entries = [*data["timing"]["nav"], *data["timing"]["res"]]
    page = [e for e in entries if not e["name"].endswith("/favicon.ico")]
    first = data["timing"]["nav"][0]["requestStart"]
    assert load.plt_ms == round(max(e["responseEnd"] for e in page) - first, 3)
    assert load.onload_ms == round(data["timing"]["nav"][0]["loadEventEnd"], 3) > load.plt_ms
    assert (load.browser, load.objects, load.bytes) == ("firefox", 12, 45_853)
    assert load.connections == connections  # HTTP/2: one; HTTP/1.1: the browser's six per host
    assert load.negotiated == data["protocol"] and load.version.startswith("153.")


def test_firefox_connections_are_the_client_sockets_to_the_server_at_the_load_event() -> None:
    sockets = captured("h1")["sockets"]
    assert browser.open_connections(sockets) == 6
    assert browser.open_connections(sockets + sockets.splitlines(keepends=True)[0]) == 6  # one socket, one count
    assert browser.open_connections("") == 0
    # Firefox's own Resource Timing would not do: it shows a connection's setup on the request that waited
    # for it, not on the one that went over it (the server's log of this load said 6, in this order).
    data = captured("h1")
    opened = [e for e in [*data["timing"]["nav"], *data["timing"]["res"]] if e["connectEnd"] > e["connectStart"]]
    assert len(opened) != 6


def test_another_protocol_than_asked_fails_a_firefox_load() -> None:
    with pytest.raises(ProtocolMismatch, match="asked for http/1.1, negotiated h2"):
        load_of(captured("h2"), "http/1.1")
    data = copy.deepcopy(captured("h1"))
    data["timing"]["res"][2]["responseStatus"] = 404
    with pytest.raises(WorkloadError, match=r"firefox: 1 objects not loaded with status 200: https://.*\(404\)"):
        load_of(data)


def test_the_firefox_profile_reaches_nothing_but_the_server() -> None:
    prefs = browser.firefox_prefs("10.0.0.2", "h2")
    # everything else goes to a proxy on the client's own loopback, where nothing listens
    assert (prefs["network.proxy.type"], prefs["network.proxy.no_proxies_on"]) == (1, "10.0.0.2")
    assert (prefs["network.proxy.ssl"], prefs["network.proxy.ssl_port"]) == ("127.0.0.1", 9)
    assert (prefs["network.proxy.http"], prefs["network.proxy.http_port"]) == ("127.0.0.1", 9)
    assert prefs["network.trr.mode"] == 5 and prefs["network.http.speculative-parallel-limit"] == 0
    assert prefs["network.http.http3.enable"] is False and prefs["network.http.http2.enabled"] is True
    assert browser.firefox_prefs("10.0.0.2", "http/1.1")["network.http.http2.enabled"] is False
    off = (
        "app.normandy.enabled",
        "dom.push.enabled",
        "toolkit.telemetry.enabled",
        "network.captive-portal-service.enabled",
    )
    assert not any(prefs[name] for name in off) and prefs["services.settings.server"] == ""
    text = browser.user_js({"a.b": True, "c": 9, "d": 'x"y'})
    assert text == 'user_pref("a.b", true);\nuser_pref("c", 9);\nuser_pref("d", "x\\"y");\n'
    with pytest.raises(ValueError, match="'h2c': a browser loads over TLS"):
        browser.firefox_prefs("10.0.0.2", "h2c")


def test_firefox_is_driven_over_bidi_on_loopback_from_a_fresh_profile() -> None:
    argv = browser.firefox_argv(Path("/p"))
    assert argv[0] == "/usr/lib/firefox-esr/firefox-esr" and "--headless" in argv
    assert argv[argv.index("--profile") + 1] == "/p"
    assert argv[argv.index("--remote-debugging-port") + 1] == "0"  # a free port, chosen by Firefox
    assert argv[argv.index("--remote-allow-hosts") + 1] == "127.0.0.1"


def test_firefox_trusts_the_one_certificate_at_the_server_alone(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(tmp_path / "k.pem"), "-out", str(cert), "-days", "1", "-subj", "/CN=t"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    openssl = subprocess.run(
        ["openssl", "x509", "-noout", "-fingerprint", "-sha256", "-in", str(cert)], check=True, capture_output=True
    )
    fingerprint = openssl.stdout.decode().strip().partition("=")[2]
    lines = browser.cert_override("10.0.0.2", 443, cert.read_bytes()).splitlines()
    assert lines[0] == "# PSM Certificate Override Settings file"
    assert lines[2].split("\t") == ["10.0.0.2:443:", "OID.2.16.840.1.101.3.4.2.1", fingerprint, "U", ""]
    assert browser.cert_override("fd00::2", 443, cert.read_bytes()).splitlines()[2].startswith("[fd00::2]:443:\t")


def test_the_bidi_url_is_read_from_firefox_stderr_and_only_on_loopback() -> None:
    messages = json.loads((FIXTURES / "firefox_bidi_messages.json").read_text())
    assert bidi.listening_url(messages["stderr"]) == "ws://127.0.0.1:33083"
    assert bidi.listening_url("*** You are running in headless mode.\n") is None
    assert bidi.listening_url("WebDriver BiDi listening on ws://0.0.0.0:9222\n") is None


@pytest.fixture
def fake_firefox() -> Iterator[Callable[[Callable[[dict[str, Any]], list[str]]], str]]:
    """A WebSocket server on loopback that answers each command with what `answer` gives (raw messages)."""
    from websockets.sync.server import ServerConnection, serve

    servers = []

    def start(answer: Callable[[dict[str, Any]], list[str]]) -> str:
        def handler(connection: ServerConnection) -> None:
            assert connection.request is not None and connection.request.path == "/session"
            for raw in connection:
                for reply in answer(json.loads(raw)):
                    connection.send(reply)

        server = serve(handler, "127.0.0.1", 0)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"ws://127.0.0.1:{server.socket.getsockname()[1]}"

    yield start
    for server in servers:
        server.shutdown()


def test_a_bidi_reply_is_told_from_the_events_before_it(fake_firefox: Any) -> None:
    messages = json.loads((FIXTURES / "firefox_bidi_messages.json").read_text())
    seen: list[dict[str, Any]] = []

    def answer(command: dict[str, Any]) -> list[str]:
        seen.append(command)
        reply = {**messages[command["method"]], "id": command["id"]}
        event = {"type": "event", "method": "log.entryAdded", "params": {}}
        return [json.dumps(event), json.dumps(reply)]

    session = bidi.BiDi(fake_firefox(answer), "fake", ns=ROOT)  # the socket made for the namespace
    assert session.capabilities["browserName"] == "firefox" and session.capabilities["browserVersion"] == "153.8.0"
    tree = session.call("browsingContext.getTree", {"maxDepth": 0})
    assert tree["contexts"][0]["url"] == "about:blank"
    assert [m["method"] for m in seen] == ["session.new", "browsingContext.getTree"]
    assert seen[0]["params"] == {"capabilities": {}} and seen[1]["id"] == 2
    assert [e["method"] for e in session.events] == ["log.entryAdded", "log.entryAdded"]
    session.close()


def test_a_bidi_error_reply_or_silence_is_a_bidi_error(fake_firefox: Any) -> None:
    messages = json.loads((FIXTURES / "firefox_bidi_messages.json").read_text())

    def answer(command: dict[str, Any]) -> list[str]:
        if command["method"] == "session.new":
            return [json.dumps({**messages["session.new"], "id": command["id"]})]
        if command["method"] == "browsingContext.navigate":
            return [json.dumps({**messages["browsingContext.navigate (refused certificate)"], "id": command["id"]})]
        return []  # silence

    session = bidi.BiDi(fake_firefox(answer), "fake")
    with pytest.raises(bidi.BiDiError, match="navigate failed: unknown error: .*CA_CERT_USED_AS_END_ENTITY"):
        session.call("browsingContext.navigate", {"context": "c", "url": "https://x/", "wait": "complete"})
    with pytest.raises(bidi.BiDiError, match="the reply to script.evaluate did not come within 0.2 s"):
        session.call("script.evaluate", timeout=0.2)
    session.close()
    with pytest.raises(bidi.BiDiError, match="fake: no WebDriver BiDi session at ws://127.0.0.1:9"):
        bidi.BiDi("ws://127.0.0.1:9", "fake", timeout=2)


def test_a_browser_version_is_the_first_number_it_prints(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fakes = {}
    for name, says in (
        ("chromium", "Chromium 156.0.8078.108 built on Debian 12"),
        ("firefox", "Mozilla Firefox 153.8.0esr"),
    ):
        fake = tmp_path / name
        fake.write_text(f"#!/bin/sh\necho '{says}'\n")
        fake.chmod(0o755)
        fakes[name] = fake
    monkeypatch.setattr(browser, "BROWSERS", fakes)
    assert browser.installed_browsers() == {"chromium": "156.0.8078.108", "firefox": "153.8.0esr"}


def test_firefox_is_a_client_of_a_page_load_and_refused_in_cleartext(machine: None) -> None:
    assert "firefox" in workloads.CLIENT.choices
    fig = expts.find("web/plt")
    grid = [{**fig.grid(True)[0], "client": "firefox", "protocol": "h2c"}]
    with pytest.raises(UserError, match="client=firefox with protocol=h2c: a browser speaks HTTP/2 only over TLS"):
        preflight.figure_needs(fig, grid, {}, "auto", None)
    with pytest.raises(ValueError, match="client 'lynx': the browsers are chromium, firefox"):
        browser.load_in_browser(None, "10.0.0.2", "/", "h2", b"", Path("/nonexistent"), client="lynx")  # type: ignore[arg-type]


def test_a_missing_firefox_is_a_setup_error_naming_its_package(
    machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setitem(browser.BROWSERS, "firefox", tmp_path / "no-firefox")
    fig = expts.find("web/plt")
    grid = [{**p, "client": "firefox"} for p in fig.grid(True)]
    needs = preflight.figure_needs(fig, grid, {}, "auto", None)
    with pytest.raises(SetupError, match="client=firefox runs .*no-firefox.*Debian's package `firefox-esr`"):
        preflight.check_machine(needs)


def test_a_figure_loaded_in_firefox_is_derived_beside_the_declared_reference(tmp_path: Path) -> None:
    derived = expts.find("cubicplus/fig6").derive({"client": "firefox"})
    reference = manifest.reference_of(derived, tmp_path)
    assert reference is not None and reference.csv.name == "fig3.csv"
    assert "reference of cubicplus/fig6 as declared (client h2load), beside client=firefox" in reference.of
