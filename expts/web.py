"""Study web: HTTP/1.1 against HTTP/2 page loads in a real browser, by RTT and by loss.

Seed 000 compared its congestion controls on pages loaded "via web browser
(Firefox)"; the mission's headline comparison is HTTP/1.1 against HTTP/2.
A browser opens up to six connections per host for HTTP/1.1 and one for
HTTP/2, and finds a page's objects as the page reveals them.  This study
loads two pages whose objects are found through dependencies (servers/
content.py, `+deps`: a third in the HTML, a third through its style sheet,
a third through its script) in Chromium (servers/browser.py), with h2load's
loads of the same page beside them, which request every object at once, as
if there were no dependencies.

Its claims quote the published anchors the comparison is known by, each
from its abstract (the sentences the papers lead with):

- Xiao Sophia Wang, Aruna Balasubramanian, Arvind Krishnamurthy, David
  Wetherall, "How Speedy is SPDY?", USENIX NSDI 2014
  (https://www.usenix.org/conference/nsdi14/technical-sessions/wang);
- Matteo Varvello, Kyle Schomp, David Naylor, Jeremy Blackburn, Alessandro
  Finamore, Konstantina Papagiannaki, "Is the Web HTTP/2 Yet?", PAM 2016
  (https://doi.org/10.1007/978-3-319-30505-9_17).

Their pages were real sites, with computation; ours are synthetic and
compute nothing, so where a sentence names computation, the test reads the
dependencies alone, and says so.
"""

from __future__ import annotations

from typing import Any

from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import AllOf, Better, Trend, Within
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure, Series
from netrepro.studykit.trial import Trial
from netrepro.studykit.variation import Variation

WANG = "wang2014-how-speedy-is-spdy.txt"  # the source's text, as the claims' folder names it
VARVELLO = "varvello2016-is-the-web-http2-yet.txt"
SOURCE = (
    'Wang et al., "How Speedy is SPDY?", NSDI 2014; Varvello et al., "Is the Web HTTP/2 Yet?", PAM 2016 '
    "(claims from their abstracts)"
)

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/web.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "0.5ms",
    (
        "the sources loaded pages in a testbed (Wang et al.) and from the live web (Varvello et al.); +-0.5 ms is"
        " within one bottleneck service time at 10 Mbit/s (1.2 ms), as the lab keeps jitter (docs/lab.md), and "
        "2.5 % of the shortest RTT (20 ms)"
    ),
)

MANY_SMALL = "small+deps"  # 30 objects of 5 KB (seed 000's 1-10 KB class), found through dependencies
FEW_LARGE = "6x250KB+deps"  # 6 objects of 250 KB
PATH: dict[str, Any] = {"rate": "10mbit", "queue": "100p", "cc": "cubic", "client": "chromium"}
RTTS = ("20ms", "50ms", "100ms", "200ms")
LOSS = ("0%", "1%", "2%", "4%")
HIGH_LOSS = ("2%", "4%")


def _series(protocol: str, page: str, client: str | None = None) -> Series:
    """A series of page loads: in the figure's browser (its fixed `client`, which `--set client=firefox`
    changes), or in another client that the series names (h2load)."""
    name = {"http/1.1": "HTTP/1.1", "h2": "HTTP/2"}[protocol]
    what = "many small objects" if page == MANY_SMALL else "few large objects"
    tool = f", {client}" if client else ""
    return Series(
        f"{name}, {what}{tool}", {"protocol": protocol, "page": page, **({"client": client} if client else {})}
    )


H1_SMALL, H2_SMALL = _series("http/1.1", MANY_SMALL), _series("h2", MANY_SMALL)
H1_LARGE, H2_LARGE = _series("http/1.1", FEW_LARGE), _series("h2", FEW_LARGE)
# h2load requests every object at once: the page load as if it had no dependencies.  Its HTTP/1.1 runs
# over cleartext (h2load's), its HTTP/2 over TLS.
H1_FLAT, H2_FLAT = _series("http/1.1", MANY_SMALL, "h2load"), _series("h2", MANY_SMALL, "h2load")

DEVIATIONS = (
    "synthetic pages that compute nothing: 30 objects of 5 KB and 6 of 250 KB, a third of each found through a "
    "style sheet, a third through a script (the papers: real sites, with their scripts' computation)",
    "Chromium 156 headless, a fresh profile per load (cold cache); both protocols over TLS, HTTP/1.1 by "
    "turning HTTP/2 off (the papers: Chrome with mod_spdy, and Firefox/Chrome over real networks)",
    "bottleneck 10 Mbit/s with a 100-packet queue and CUBIC (Wang et al. varied bandwidth, RTT and loss "
    "with a Linux shaper; Varvello et al. measured fiber, 4G and 3G)",
)
# "The same", "faster": the margins of the words.  A gain named as a number (7 %) is read as that number
# give or take the same margin.
WORTH = 0.05


def _claim(source: str, quote: str, test: Any, reading: str) -> Claim:
    return Claim(source=source, where="abstract", quote=quote, test=test, why=reading)


H2_FASTER = _claim(
    VARVELLO,
    "In all, we find that 80% of websites supporting HTTP/2 experience a decrease in page load time compared "
    "with HTTP/1.1 and the decrease grows in mobile networks.",
    AllOf(
        (
            Better("page_load_time_ms", H2_SMALL.label, H1_SMALL.label, higher=False, worth=WORTH),
            Trend("page_load_time_ms", H1_SMALL.label, rises=True, against=H2_SMALL.label),
        )
    ),
    "one page is not 80 % of websites: read on the page of many small objects, the web's typical page, as "
    f"HTTP/2's page load time lower than HTTP/1.1's by at least {WORTH:.0%} at every RTT, and 'grows in mobile "
    "networks' (whose RTTs are the longest) as HTTP/1.1's time over HTTP/2's rising with the RTT",
)
DEPENDENCIES_SHRINK = _claim(
    WANG,
    "Unfortunately, the benefits can be easily overwhelmed by dependencies and computation, reducing the "
    "improvements with SPDY to 7% for our lower bandwidth and higher RTT scenarios.",
    Within("page_load_time_ms", H2_SMALL.label, H1_SMALL.label, 1 - 0.07 - WORTH, 1 - 0.07 + WORTH, levels=("200ms",)),
    "our pages compute nothing, so only the dependencies can overwhelm: on the page of many small objects at "
    f"the highest RTT (200 ms) and our low bandwidth (10 Mbit/s), HTTP/2's page load time over HTTP/1.1's "
    f"within 7 % +- {WORTH:.0%} of a 7 % gain (a ratio of {1 - 0.07 - WORTH:.2f} to {1 - 0.07 + WORTH:.2f})",
)
FLAT_GAIN = _claim(
    WANG,
    "We find that SPDY provides a significant improvement over HTTP when we ignore dependencies in the page "
    "load process and the effects of browser computation.",
    Better("page_load_time_ms", H2_FLAT.label, H1_FLAT.label, higher=False, worth=WORTH, levels=("200ms",)),
    "h2load requests every object at once: the page load without dependencies or computation.  Its HTTP/2 "
    f"page load time lower than its HTTP/1.1's by at least {WORTH:.0%} ('significant') at the same highest "
    "RTT as the sentence beside it, so that the two say how much the dependencies take",
)
LOSS_HURTS = _claim(
    WANG,
    "Most SPDY benefits stem from the use of a single TCP connection, but the same feature is also detrimental "
    "under high packet loss.",
    Better("page_load_time_ms", H1_LARGE.label, H2_LARGE.label, higher=False, worth=WORTH, levels=HIGH_LOSS),
    "on the page of few large objects, where the bytes of one connection wait behind every loss: HTTP/1.1's "
    f"page load time lower than HTTP/2's by at least {WORTH:.0%} at our highest loss rates (2 and 4 %)",
)


def timeout(trial: Trial) -> float:
    """A trial's limit: the longest trial of the reference runs took 12.2 s (the few-large page at 4 % loss)."""
    return 180.0


def _figure(name: str, title: str, x: str, levels: tuple[Any, ...], **kw: Any) -> Figure:
    return Figure(
        variation=VARIATION,
        study="web",
        name=name,
        title=title,
        workload="page_load",
        x=x,
        levels=levels,
        y="page_load_time_ms",
        y_label="page load time (ms): first request to last object",
        y_log=True,
        deviations=DEVIATIONS,
        trial_timeout=timeout,
        trials=10,
        quick_trials=2,
        **kw,
    )


FIGURES = (
    _figure(
        "plt",
        "HTTP/1.1 against HTTP/2 in a browser, by RTT",
        "rtt",
        RTTS,
        fixed={**PATH, "loss": "0%"},
        series=(H1_SMALL, H2_SMALL, H1_LARGE, H2_LARGE, H1_FLAT, H2_FLAT),
        quick_levels=("20ms", "200ms"),
        x_label="RTT (ms)",
        finding="Varvello et al.: HTTP/2 loads most sites faster, more so on mobile networks; Wang et al.: "
        "dependencies and computation shrink SPDY's gain to 7 % at low bandwidth and high RTT",
        claims=(H2_FASTER, DEPENDENCIES_SHRINK, FLAT_GAIN),
    ),
    _figure(
        "plt_loss",
        "HTTP/1.1 against HTTP/2 in a browser, by loss",
        "loss",
        LOSS,
        fixed={**PATH, "rtt": "50ms"},
        series=(H1_SMALL, H2_SMALL, H1_LARGE, H2_LARGE),
        quick_levels=("0%", "4%"),
        x_label="loss (%)",
        finding="Wang et al.: SPDY's single connection is detrimental under high packet loss",
        claims=(LOSS_HURTS,),
    ),
)

# The derived figure results/reference keeps (netrepro.studykit.kept), judged by plt's claims
# (docs/studies/web.md: seed 000 loaded its pages "via web browser (Firefox)").
KEPT = (
    Kept(
        "plt",
        {"client": "firefox"},
        "plt's browser loads in Firefox ESR, seed 000's own browser, beside the declared figure's Chromium; "
        "declared before its rows are measured",
        (H2_FASTER, DEPENDENCIES_SHRINK, FLAT_GAIN),
    ),
)
