"""A real browser loads a page in a lab host: Chromium or Firefox, headless, timed by its own Resource Timing.

Seed 000 loaded its pages "via web browser (Firefox)", clearing the cache
before each load, and took page load time as "the elapsed time between when
the first object is requested and when the last object is received".  Here
each load gets a browser of its own with a fresh profile (a cold cache and no
connection left from an earlier load), started in the client's namespace
before the measured navigation, so its start is not in the time.  Chromium is
driven over the DevTools protocol on a pipe (servers.devtools: no port is
opened); Firefox, seed 000's own browser, over WebDriver BiDi on the client
namespace's loopback (servers.bidi: nothing outside that namespace reaches it).

- **Binary**: Debian's `/usr/lib/chromium/chromium`, not the `/usr/bin`
  wrapper, which adds flags from `/etc/chromium.d/`.  The argument list is
  `chromium_argv`, the same for every load but the profile, the server's
  address and the protocol; a figure's manifest records it.
- **TLS**: both protocols run over TLS (a browser speaks HTTP/2 only there),
  HTTP/1.1 by turning HTTP/2 off, so that the two differ in framing and
  connections only.  The server's certificate is made per run; the browser
  trusts that one key alone (`--ignore-certificate-errors-spki-list` with its
  hash), and nothing is added to a trust store.  Firefox trusts that one
  certificate (its SHA-256 fingerprint) at the server's address and port
  alone, by an exception in its fresh profile (`cert_override.txt`, what its
  "accept the risk" button writes): no trust store, not even the profile's
  own NSS database, holds it, and no other certificate error is let through
  (the certificate is self-signed with CA:TRUE, which Firefox refuses as a
  server's even when its database trusts it).
- **Nothing else on the wire**: names resolve to nothing but the server's
  address (`--host-resolver-rules`), QUIC, background networking, component
  updates and sync are off.  Firefox's profile (`firefox_prefs`, its user.js)
  sends every request for another address to a proxy on the client's own
  loopback where nothing listens, so no name is looked up and nothing leaves;
  HTTP/3, DNS over HTTPS, prefetching, speculative connections, telemetry,
  safe browsing, updates, remote settings, push, Normandy and captive portal
  detection are off.  The profile, its cache and the browser's home
  directory are one fresh folder, removed after the load (the session's
  folder, in the run's ledger, if the run is killed).
- **Metrics** (`BrowserLoad`): `plt_ms`, seed 000's page load time, from the
  HTML's requestStart to the last responseEnd of any resource; `onload_ms`,
  Navigation Timing's loadEventEnd; objects and body bytes; the connections
  the responses came over (Chromium: DevTools' connectionId; Firefox, which
  has no such id and whose Resource Timing misattributes reuse, the client's
  TCP connections to the server's port open at the load event, counted by `ss`
  in the client's namespace: `open_connections`); the protocol each came
  over (nextHopProtocol).  The browser's own request for /favicon.ico is
  not the page's: it is left out (it failed 2 of 200 loads of a reference
  run with its 404 before it was).  A load that fails (an error page, a resource not
  200, the load event not reached in time, a protocol other than asked) is a
  `WorkloadError` with the browser's reason, never a number.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ground.ledger import Ledger
from ground.proc import Netns, Process, run
from servers.apache import TLS_PORT
from servers.bidi import BiDi, BiDiError, listening_url
from servers.clients import ProtocolMismatch, WorkloadError
from servers.devtools import DevTools, DevToolsError, pipe_argv

__all__ = [
    "BROWSERS",
    "CHROMIUM",
    "FIREFOX",
    "H1_MAX_CONNECTIONS",
    "BrowserLoad",
    "cert_override",
    "chromium_argv",
    "firefox_argv",
    "firefox_load",
    "firefox_prefs",
    "installed_browsers",
    "load_in_browser",
    "open_connections",
    "page_url",
    "refused",
    "spki_hash",
    "user_js",
]

CHROMIUM = Path("/usr/lib/chromium/chromium")
FIREFOX = Path("/usr/lib/firefox-esr/firefox-esr")  # Debian's firefox-esr (/usr/bin/firefox-esr links to it)
BROWSERS: dict[str, Path] = {"chromium": CHROMIUM, "firefox": FIREFOX}
# The Debian package of each browser, for the messages that say where to get it.
PACKAGES = {"chromium": "chromium", "firefox": "firefox-esr"}
H1_MAX_CONNECTIONS = 6  # a browser's connections per host for HTTP/1.1 (Chromium's and Firefox's default)
START_TIMEOUT_S = 30.0
FAVICON = "/favicon.ico"
# What Resource Timing reports as nextHopProtocol for what a trial asks for.
NEXT_HOP = {"http/1.1": "http/1.1", "h2": "h2"}
_TIMING = (
    "JSON.stringify({nav: performance.getEntriesByType('navigation').map(e => e.toJSON()),"
    " res: performance.getEntriesByType('resource').map(e => e.toJSON())})"
)


@dataclass(frozen=True)
class BrowserLoad:
    """One page loaded by a browser; times in milliseconds from the navigation's start."""

    browser: str
    version: str
    plt_ms: float  # the HTML's request to the last object's last byte (seed 000's page load time)
    onload_ms: float  # Navigation Timing's loadEventEnd
    first_request_ms: float
    objects: int  # the HTML and every resource
    bytes: int  # body bytes, as sent (encodedBodySize)
    connections: int  # distinct connections the responses came over
    protocols: Mapping[str, int]  # nextHopProtocol: how many objects came over each

    @property
    def negotiated(self) -> str:
        """The protocols objects came over, e.g. 'h2' or 'h2:20+http/1.1:1' when mixed."""
        if len(self.protocols) == 1:
            return next(iter(self.protocols))
        return "+".join(f"{p}:{n}" for p, n in sorted(self.protocols.items()))


def refused(client: str, protocol: str) -> str | None:
    """Why a page load by `client` cannot speak `protocol` (a browser: HTTP/2 only over TLS), or None."""
    if client in BROWSERS and protocol not in NEXT_HOP:
        return (
            f"client={client} with protocol={protocol}: a browser speaks HTTP/2 only over TLS; "
            f"give protocol {' or '.join(NEXT_HOP)}"
        )
    return None


def installed_browsers() -> dict[str, str]:
    """Each browser this project drives that is installed here, with its version ('' if it gave none)."""
    found = {}
    for name, binary in BROWSERS.items():
        if binary.is_file() and os.access(binary, os.X_OK):
            done = run([str(binary), "--version"], check=False, timeout=30)
            # "Chromium 156.0.8078.108 built on Debian ...", "Mozilla Firefox 153.8.0esr"
            numbers = [w for w in done.stdout.split() if w[:1].isdigit()]
            found[name] = numbers[0] if numbers and done.returncode == 0 else ""
    return found


def spki_hash(cert_pem: bytes) -> str:
    """base64 of the SHA-256 of a certificate's SubjectPublicKeyInfo: how Chromium names a key to trust."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    key = x509.load_pem_x509_certificate(cert_pem).public_key()
    spki = key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


def page_url(server: str, path: str) -> str:
    """The page's URL: over TLS for both protocols (see the module's docstring)."""
    return f"https://{server}:{TLS_PORT}{path}"


def chromium_argv(profile: Path, server: str, protocol: str, spki: str, binary: Path = CHROMIUM) -> list[str]:
    """Chromium headless with a fresh profile, driven over a pipe, reaching nothing but `server`."""
    if protocol not in NEXT_HOP:
        raise ValueError(f"protocol {protocol!r}: a browser loads over TLS, {' or '.join(NEXT_HOP)}")
    return [
        str(binary),
        "--headless",
        "--no-sandbox",  # runs as root in a lab host
        f"--user-data-dir={profile}",
        "--remote-debugging-pipe",
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--disable-default-apps",
        "--disable-domain-reliability",
        "--disable-breakpad",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--mute-audio",
        f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {server}",
        f"--ignore-certificate-errors-spki-list={spki}",
        *(["--disable-http2"] if protocol == "http/1.1" else []),
        "about:blank",
    ]


def firefox_argv(profile: Path, binary: Path = FIREFOX) -> list[str]:
    """Firefox headless with a fresh profile, its WebDriver BiDi on a port it picks on the namespace's loopback.

    What it may reach and what it trusts is in the profile (`firefox_prefs`, `cert_override`)."""
    return [
        str(binary),
        "--headless",
        "--no-remote",
        "--profile",
        str(profile),
        "--remote-debugging-port",
        "0",  # a free port, chosen by Firefox and printed on its stderr (servers.bidi.listening_url)
        "--remote-allow-hosts",
        "127.0.0.1",
        "about:blank",
    ]


def firefox_prefs(server: str, protocol: str) -> dict[str, bool | int | str]:
    """The preferences of a load's fresh Firefox profile: nothing on the wire but the page, HTTP/2 on or off."""
    if protocol not in NEXT_HOP:
        raise ValueError(f"protocol {protocol!r}: a browser loads over TLS, {' or '.join(NEXT_HOP)}")
    return {
        # Every request but the server's goes to a proxy on the client's loopback where nothing listens:
        # no name is looked up, nothing else leaves the host.
        "network.proxy.type": 1,
        "network.proxy.http": "127.0.0.1",
        "network.proxy.http_port": 9,
        "network.proxy.ssl": "127.0.0.1",
        "network.proxy.ssl_port": 9,
        "network.proxy.share_proxy_settings": False,
        "network.proxy.no_proxies_on": server,
        "network.trr.mode": 5,  # DNS over HTTPS off
        "network.http.http3.enable": False,  # no QUIC (Chromium: --disable-quic)
        "network.http.http2.enabled": protocol == "h2",
        "network.http.max-persistent-connections-per-server": H1_MAX_CONNECTIONS,  # Firefox's default, made sure
        "network.http.speculative-parallel-limit": 0,  # no connection opened ahead of a request
        "network.dns.disablePrefetch": True,
        "network.prefetch-next": False,
        "network.predictor.enabled": False,
        "network.captive-portal-service.enabled": False,
        "network.connectivity-service.enabled": False,
        "privacy.reduceTimerPrecision": False,  # Resource Timing to the microsecond, not rounded to 1 ms
        "security.OCSP.enabled": 0,
        "security.remote_settings.crlite_filters.enabled": False,
        "security.remote_settings.intermediates.enabled": False,
        "services.settings.server": "",  # remote settings
        "app.update.disabledForTesting": True,
        "app.normandy.enabled": False,
        "app.shield.optoutstudies.enabled": False,
        "extensions.update.enabled": False,
        "extensions.getAddons.cache.enabled": False,
        "extensions.systemAddon.update.enabled": False,
        "dom.push.enabled": False,
        "dom.push.connection.enabled": False,
        "datareporting.policy.dataSubmissionEnabled": False,
        "datareporting.healthreport.uploadEnabled": False,
        "toolkit.telemetry.enabled": False,
        "toolkit.telemetry.unified": False,
        "toolkit.telemetry.server": "",
        "browser.safebrowsing.malware.enabled": False,
        "browser.safebrowsing.phishing.enabled": False,
        "browser.safebrowsing.downloads.enabled": False,
        "browser.safebrowsing.blockedURIs.enabled": False,
        "browser.safebrowsing.downloads.remote.enabled": False,
        "browser.region.update.enabled": False,
        "browser.region.network.url": "",
        "browser.topsites.contile.enabled": False,
        "browser.newtabpage.enabled": False,
        "browser.shell.checkDefaultBrowser": False,
        "browser.startup.page": 0,
        "browser.startup.homepage_override.mstone": "ignore",
        "browser.aboutwelcome.enabled": False,
        "browser.sessionstore.resume_from_crash": False,
        "media.gmp-manager.updateEnabled": False,
        "geo.enabled": False,
    }


def user_js(prefs: Mapping[str, bool | int | str]) -> str:
    """A profile's user.js setting `prefs` (read at every start, over the profile's own prefs.js)."""
    return "".join(f"user_pref({json.dumps(name)}, {json.dumps(value)});\n" for name, value in prefs.items())


def cert_override(server: str, port: int, cert_pem: bytes) -> str:
    """A profile's cert_override.txt: Firefox accepts this one certificate (SHA-256) at server:port, nothing else."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes

    digest = x509.load_pem_x509_certificate(cert_pem).fingerprint(hashes.SHA256())
    fingerprint = ":".join(f"{b:02X}" for b in digest)
    host = f"[{server}]" if ":" in server else server
    # host:port:origin attributes, the hash's OID (SHA-256), the fingerprint, the errors let through
    # (U: an untrusted issuer), the certificate's database key (none: it is in no database)
    return (
        "# PSM Certificate Override Settings file\n"
        "# This is a generated file!  Do not edit.\n"
        f"{host}:{port}:\tOID.2.16.840.1.101.3.4.2.1\t{fingerprint}\tU\t\n"
    )


def _environment(home: Path) -> dict[str, str]:
    """The browser's environment: its home, caches and temporary files all inside the load's folder."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local/share"),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        # the launcher (servers.devtools) imports the same code as the run
        **({"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}),
    }


def wait_addresses_settled(ns: Netns, timeout: float = 5.0) -> None:
    """Wait until no address in `ns` is tentative (IPv6 duplicate address detection on a new link).

    Chromium watches the host's addresses: one that settles during a load fails it with
    ERR_NETWORK_CHANGED, and a lab's links are new."""
    deadline = time.monotonic() + timeout
    while run(["ip", "-o", "-6", "address", "show", "tentative"], ns).stdout.strip():
        if time.monotonic() > deadline:
            raise WorkloadError(f"{ns.name}: addresses still tentative after {timeout:g} s (IPv6 DAD)")
        time.sleep(0.05)


def load_in_browser(
    ns: Netns,
    server: str,
    path: str,
    protocol: str,
    cert_pem: bytes,
    folder: Path,
    *,
    client: str = "chromium",
    ledger: Ledger | None = None,
    resources: int | None = None,
    timeout: float = 120.0,
) -> BrowserLoad:
    """Load https://server/path in a fresh `client` (a name in BROWSERS) in `ns`, its profile made in `folder`
    and removed after.

    `resources`: how many objects (the HTML among them) the page has; a load that got another number
    fails.  The load must reach its load event within `timeout` seconds."""
    if client not in BROWSERS:
        raise ValueError(f"client {client!r}: the browsers are {', '.join(BROWSERS)}")
    load_in = _firefox_in if client == "firefox" else _chromium_in
    with _load_folder(folder) as load_dir:
        return load_in(load_dir, ns, server, path, protocol, cert_pem, ledger, resources, timeout)


def _chromium_in(
    load_dir: Path,
    ns: Netns,
    server: str,
    path: str,
    protocol: str,
    cert_pem: bytes,
    ledger: Ledger | None,
    resources: int | None,
    timeout: float,
) -> BrowserLoad:
    commands_r = commands_w = replies_r = replies_w = -1
    browser: Process | None = None
    try:
        argv = chromium_argv(load_dir / "profile", server, protocol, spki_hash(cert_pem))
        wait_addresses_settled(ns)
        commands_r, commands_w = os.pipe()
        replies_r, replies_w = os.pipe()
        devtools = DevTools(commands_w, replies_r, "chromium")
        with open(load_dir / "stderr.log", "wb") as stderr:
            browser = Process(
                pipe_argv(commands_r, replies_w, argv),
                ns,
                ledger=ledger,
                stdout=stderr,
                stderr=stderr,
                label="chromium",
                env=_environment(load_dir / "home"),
                pass_fds=(commands_r, replies_w),
            )
        for fd in (commands_r, replies_w):  # the browser's ends: ours closed, so its exit ends the pipe
            os.close(fd)
        commands_r = replies_w = -1
        try:
            return _navigate(devtools, page_url(server, path), protocol, resources, timeout)
        except DevToolsError as e:
            raise WorkloadError(f"{e}{_stderr_tail(load_dir / 'stderr.log', browser)}") from None
    finally:
        if browser is not None:
            with contextlib.suppress(DevToolsError):  # a polite close first; stop() ends it either way
                if browser.running():
                    devtools.call("Browser.close", timeout=5)
            browser.stop(grace=5)
        for fd in (commands_r, commands_w, replies_r, replies_w):
            if fd >= 0:
                os.close(fd)


@contextlib.contextmanager
def _load_folder(folder: Path) -> Iterator[Path]:
    """A fresh folder for one load in `folder` (the session's): its profile, home and home/tmp, removed after
    the load; one that cannot be removed now goes with the session's folder, in the run's ledger."""
    load_dir = folder / f"load-{os.urandom(4).hex()}"
    load_dir.mkdir(mode=0o700)
    try:
        for sub in ("profile", "home", "home/tmp"):
            (load_dir / sub).mkdir(mode=0o700)
        yield load_dir
    finally:
        shutil.rmtree(load_dir, ignore_errors=True)


def _write_new(path: Path, text: str) -> None:
    """Write a new file (never through a planted symlink, never over a file already there)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def _firefox_in(
    load_dir: Path,
    ns: Netns,
    server: str,
    path: str,
    protocol: str,
    cert_pem: bytes,
    ledger: Ledger | None,
    resources: int | None,
    timeout: float,
) -> BrowserLoad:
    browser: Process | None = None
    bidi: BiDi | None = None
    try:
        profile = load_dir / "profile"
        _write_new(profile / "user.js", user_js(firefox_prefs(server, protocol)))
        _write_new(profile / "cert_override.txt", cert_override(server, TLS_PORT, cert_pem))
        wait_addresses_settled(ns)
        log = load_dir / "stderr.log"
        with open(log, "wb") as stderr:
            browser = Process(
                firefox_argv(profile),
                ns,
                ledger=ledger,
                stdout=stderr,
                stderr=stderr,
                label="firefox",
                env={**_environment(load_dir / "home"), "MOZ_CRASHREPORTER_DISABLE": "1"},
            )
        try:
            bidi = BiDi(_wait_listening(log, browser), "firefox", timeout=START_TIMEOUT_S, ns=ns)
            return _navigate_firefox(bidi, ns, server, page_url(server, path), protocol, resources, timeout)
        except BiDiError as e:
            raise WorkloadError(f"{e}{_stderr_tail(log, browser)}") from None
    finally:
        if bidi is not None:
            with contextlib.suppress(BiDiError):  # a polite close first; stop() ends it either way
                if browser is not None and browser.running():
                    bidi.call("browser.close", timeout=5)
            bidi.close()
        if browser is not None:
            browser.stop(grace=5)


def _wait_listening(log: Path, browser: Process) -> str:
    """The URL of Firefox's WebDriver BiDi, once its stderr says it listens."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while (url := listening_url(log.read_text(errors="replace"))) is None:
        if not browser.running():
            raise BiDiError("firefox exited before it listened for WebDriver BiDi")
        if time.monotonic() > deadline:
            raise BiDiError(f"firefox: WebDriver BiDi not listening within {START_TIMEOUT_S:g} s")
        time.sleep(0.05)
    return url


def _navigate_firefox(
    bidi: BiDi, ns: Netns, server: str, url: str, protocol: str, resources: int | None, timeout: float
) -> BrowserLoad:
    version = str(bidi.capabilities.get("browserVersion", ""))
    context = bidi.call("browsingContext.getTree", {"maxDepth": 0})["contexts"][0]["context"]
    try:  # "complete": the reply comes once the page's load event has fired
        bidi.call("browsingContext.navigate", {"context": context, "url": url, "wait": "complete"}, timeout=timeout)
    except BiDiError as e:
        if "did not come within" in str(e) or "is gone" in str(e):
            raise
        raise WorkloadError(f"firefox: {url}: {str(e).partition(' failed: ')[2]}") from None
    sockets = run(["ss", "-H", "-t", "-n", "state", "established", "dst", f"{server}:{TLS_PORT}"], ns).stdout
    evaluated = bidi.call(
        "script.evaluate", {"expression": _TIMING, "target": {"context": context}, "awaitPromise": False}
    )
    if evaluated.get("type") != "success":
        raise WorkloadError(f"firefox: reading the page's timing failed: {evaluated.get('exceptionDetails')}")
    timing = json.loads(evaluated["result"]["value"])
    return firefox_load(version, timing, sockets, protocol, resources)


def open_connections(ss_output: str) -> int:
    """How many TCP connections `ss -H -t -n state established dst SERVER:PORT` lists (one a line).

    Firefox has no connection id in what it reports, and its Resource Timing shows a new connection's
    setup on whichever request waited for it, not on the one that went over it; the sockets the client
    holds to the server's port when the load event fires are the connections the page used.  Firefox
    keeps an idle connection 115 s and the server 30 s (servers.apache), so none closes during a load
    shorter than that, and no connection is opened ahead of a request (firefox_prefs)."""
    return len({tuple(line.split()[-2:]) for line in ss_output.splitlines() if line.strip()})


def _stderr_tail(log: Path, browser: Process, lines: int = 5) -> str:
    if browser.running():
        return ""
    text = log.read_text(errors="replace").splitlines() if log.exists() else []
    wanted = [line for line in text if "dbus" not in line.lower()][-lines:]
    return " (the browser exited: " + " | ".join(wanted) + ")" if wanted else " (the browser exited)"


def _navigate(devtools: DevTools, url: str, protocol: str, resources: int | None, timeout: float) -> BrowserLoad:
    version = devtools.call("Browser.getVersion", timeout=START_TIMEOUT_S)["product"].partition("/")[2]
    target = devtools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
    session = devtools.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Page", "Network"):
        devtools.call(f"{domain}.enable", session=session)
    # Only events from here on belong to the page load.
    devtools.events.clear()
    navigated = devtools.call("Page.navigate", {"url": url}, session=session, timeout=timeout)
    if navigated.get("errorText"):
        raise WorkloadError(f"chromium: {url}: {navigated['errorText']}")
    devtools.wait_event("Page.loadEventFired", session=session, timeout=timeout)
    evaluated = devtools.call("Runtime.evaluate", {"expression": _TIMING, "returnByValue": True}, session=session)
    timing = json.loads(evaluated["result"]["value"])
    received = [e["params"] for e in devtools.events if e.get("method") == "Network.responseReceived"]
    return browser_load("chromium", version, timing, received, protocol, resources)


def browser_load(
    browser: str,
    version: str,
    timing: Mapping[str, Sequence[Mapping[str, object]]],
    received: Sequence[Mapping[str, object]],
    protocol: str,
    resources: int | None,
) -> BrowserLoad:
    """The metrics of a Chromium load from its Navigation and Resource Timing entries (`timing`: nav, res) and
    the DevTools responses (`received`); WorkloadError for a load that did not give what was asked."""
    entries = _page_entries(browser, timing, protocol, resources)
    names = {str(e["name"]) for e in entries}
    connections = {
        event["response"]["connectionId"]  # type: ignore[index]
        for event in received
        if str(event["response"]["url"]) in names  # type: ignore[index]
    }
    return _load_of(browser, version, entries, len(connections))


def firefox_load(
    version: str,
    timing: Mapping[str, Sequence[Mapping[str, object]]],
    sockets: str,
    protocol: str,
    resources: int | None,
) -> BrowserLoad:
    """The metrics of a Firefox load from its Navigation and Resource Timing entries (`timing`: nav, res) and
    the client's connections to the server at the load event (`sockets`, `ss`'s: `open_connections`)."""
    entries = _page_entries("firefox", timing, protocol, resources)
    return _load_of("firefox", version, entries, open_connections(sockets))


def _page_entries(
    browser: str, timing: Mapping[str, Sequence[Mapping[str, object]]], protocol: str, resources: int | None
) -> list[Mapping[str, object]]:
    """The page's timing entries (the navigation's first), each checked: loaded whole, over `protocol`."""
    if len(timing["nav"]) != 1:
        raise WorkloadError(f"{browser}: {len(timing['nav'])} navigation entries, expected 1")
    nav = timing["nav"][0]
    # The browser asks for /favicon.ico on its own, and may list it when it came in time: not the page's.
    entries = [nav, *(e for e in timing["res"] if urlsplit(str(e["name"])).path != FAVICON)]
    bad = [f"{e['name']} ({e.get('responseStatus')})" for e in entries if e.get("responseStatus") != 200]
    if bad:
        raise WorkloadError(f"{browser}: {len(bad)} objects not loaded with status 200: {', '.join(bad[:3])}")
    if resources is not None and len(entries) != resources:
        raise WorkloadError(f"{browser}: {len(entries)} objects loaded, the page has {resources}")
    protocols = {str(e["nextHopProtocol"]) for e in entries}
    if protocols != {NEXT_HOP[protocol]}:
        raise ProtocolMismatch(protocol, "+".join(sorted(protocols)), browser)
    return entries


def _load_of(browser: str, version: str, entries: Sequence[Mapping[str, object]], connections: int) -> BrowserLoad:
    nav = entries[0]
    first = float(nav["requestStart"])  # type: ignore[arg-type]
    last = max(float(e["responseEnd"]) for e in entries)  # type: ignore[arg-type]
    return BrowserLoad(
        browser=browser,
        version=version,
        plt_ms=round(last - first, 3),
        onload_ms=round(float(nav["loadEventEnd"]), 3),  # type: ignore[arg-type]
        first_request_ms=round(first, 3),
        objects=len(entries),
        bytes=sum(int(e["encodedBodySize"]) for e in entries),  # type: ignore[call-overload]
        connections=connections,
        protocols=dict(collections.Counter(str(e["nextHopProtocol"]) for e in entries)),
    )
