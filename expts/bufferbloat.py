"""Study bufferbloat: CUBIC, Reno and BBR through bottleneck buffers from a quarter of a BDP to four.

One 15 s flow a trial (the `long_flow` workload: iperf3, tcp_probe at every
ACK) over a 10 Mbit/s, 40 ms path, whose bandwidth-delay product is 50,000
bytes, 33 full frames: the buffer goes from 8 packets (a quarter of it) to
132 (four times it).  Each trial reports its goodput and its RTT under load
(the sender's smoothed RTT at every ACK, ground.latency), and stores its
flows' time series (`run.sh plot`).  A loss-based congestion control backs
off only when the buffer overflows, so it keeps a large buffer full, and the
queue adds its whole drain time to every round trip; BBR paces at the
bottleneck's rate it measured and caps what it has in flight near twice the
BDP.  `aqm` (the stock-kernel lane only: this project's machines have no
AQM) puts fq_codel in place of the drop-tail buffer at its largest size.

Its claims quote the sources the field knows these sentences by:

- Neal Cardwell, Yuchung Cheng, C. Stephen Gunn, Soheil Hassas Yeganeh, Van
  Jacobson, "BBR: Congestion-Based Congestion Control", ACM Queue 14(5),
  2016 (https://doi.org/10.1145/3012426.3022184), its abstract;
- Neal Cardwell et al., "BBR Congestion Control",
  draft-cardwell-iccrg-bbr-congestion-control-02, IETF, 2022
  (https://datatracker.ietf.org/doc/draft-cardwell-iccrg-bbr-congestion-control/02/),
  its abstract;
- Toke Hoeiland-Joergensen et al., "The Flow Queue CoDel Packet Scheduler
  and Active Queue Management Algorithm", RFC 8290, 2018
  (https://www.rfc-editor.org/rfc/rfc8290), its abstract.

Their texts are not in this repository; the quote test checks them where
the sources' folder holds them under the names the claims give.
"""

from __future__ import annotations

from typing import Any

from netrepro.studykit import tradeoff
from netrepro.studykit.cells import Group
from netrepro.studykit.claims import Claim
from netrepro.studykit.decisions import AllOf, Better, Regrouped, Trend
from netrepro.studykit.kept import Kept
from netrepro.studykit.spec import Figure, Series
from netrepro.studykit.trial import Trial
from netrepro.studykit.variation import Variation

BBR_QUEUE = "cardwell2016-bbr-acm-queue.txt"  # the source's text, as the claims' folder names it
BBR_DRAFT = "draft-cardwell-iccrg-bbr-congestion-control-02.txt"
FQ_CODEL = "rfc8290.txt"
SOURCE = (
    'Cardwell et al., "BBR: Congestion-Based Congestion Control", ACM Queue 2016, and "BBR Congestion Control", '
    "IETF draft-cardwell-iccrg-bbr-congestion-control-02, 2022; Hoeiland-Joergensen et al., RFC 8290, 2018 "
    "(claims from their abstracts)"
)

# What this study's paths vary from trial to trial beyond the start phase (netrepro.studykit.variation,
# docs/studies/bufferbloat.md, "What varies"): why that much, from the source's description of its network.
VARIATION = Variation.of(
    "1ms",
    (
        "the sources measured live paths (Google's WAN, YouTube) and testbeds; +-1 ms is what the host figures' "
        "own paths already set, within one bottleneck service time at 10 Mbit/s (1.2 ms), and it gives the lane's"
        " AQM figure draws of its own through netem's rate form"
    ),
)

# 10 Mbit/s x 40 ms = 50,000 bytes: 33 frames of 1514 bytes.  The buffers: 1/4, 1/2, 1, 2 and 4 BDPs.
BDP_PACKETS = 33
BUFFERS = ("8p", "16p", "33p", "66p", "132p")
SHALLOW = ("8p",)
DEEP = ("66p", "132p")
# Each emulated direction's delay jitters by +-1 ms (uniform, packets kept in order): the trials vary as a
# path's do, rather than replay the emulator at another start phase.
PATH: dict[str, Any] = {"rtt": "40ms", "rate": "10mbit", "jitter": "1ms", "duration_s": 15}

CUBIC, RENO, BBR = Series("CUBIC", {"cc": "cubic"}), Series("Reno", {"cc": "reno"}), Series("BBR", {"cc": "bbr"})
LOSS_BASED = (CUBIC, RENO)

# "substantially": a quarter, well past this project's smallest effect (5 %) and "significant" (10 %)
SUBSTANTIAL = 0.25
# "low throughput" beside a control that does not read loss as congestion: by at least 10 %
LOW = 0.10

DEVIATIONS = (
    "one flow on an emulated 10 Mbit/s, 40 ms path (the userspace delay line, each direction's delay jittering "
    "by +-1 ms in order; HTB's drop-tail buffer); the sources measured Google's WAN and YouTube (BBR) and "
    "testbeds (FQ-CoDel)",
    "BBR is Linux's bbr (v1, 6.x kernels), the algorithm of the ACM Queue paper; the draft specifies v2",
    "the RTT under load is the sender's smoothed RTT at every ACK (tcp_probe), not a ping beside the flow",
)


def _buffer_packets(level: Any) -> float:
    return float(str(level).removesuffix("p"))


def _claim(source: str, quote: str, test: Any, why: str) -> Claim:
    return Claim(source=source, where="abstract", quote=quote, test=test, why=why)


KEEPS_FULL = _claim(
    BBR_QUEUE,
    "When bottleneck buffers are large, loss-based congestion control keeps them full, causing bufferbloat.",
    AllOf(
        tuple(Trend("rtt_p95_ms", s.label, rises=True, x=_buffer_packets, levels=("33p", *DEEP)) for s in LOSS_BASED)
    ),
    "a buffer kept full adds its whole drain time to the round trip, so the RTT under load of a loss-based "
    "control (CUBIC and Reno) rises with the buffer from one BDP to four, at every step by at least this "
    "project's smallest effect",
)
SHALLOW_LOW = _claim(
    BBR_QUEUE,
    "When bottleneck buffers are small, loss-based congestion control misinterprets loss as a signal of "
    "congestion, leading to low throughput.",
    AllOf(
        tuple(Better("goodput_mbit", BBR.label, s.label, higher=True, worth=LOW, levels=SHALLOW) for s in LOSS_BASED)
    ),
    f"'low' beside a control that does not read loss as congestion (BBR), through the smallest buffer (a "
    f"quarter of a BDP): CUBIC's and Reno's goodput below BBR's by at least {LOW:.0%}",
)
DRAFT_DEEP = _claim(
    BBR_DRAFT,
    "BBR offers substantially higher throughput for bottlenecks with shallow buffers or random losses, and "
    "substantially lower queueing delays for bottlenecks with deep buffers",
    AllOf(
        (
            *(
                Better("rtt_p95_ms", BBR.label, s.label, higher=False, worth=SUBSTANTIAL, levels=DEEP)
                for s in LOSS_BASED
            ),
            *(
                Better("goodput_mbit", BBR.label, s.label, higher=True, worth=SUBSTANTIAL, levels=SHALLOW)
                for s in LOSS_BASED
            ),
        )
    ),  # fmt: skip
    f"'substantially' read as {SUBSTANTIAL:.0%}, against both loss-based controls the sentence names (Reno, "
    "CUBIC): BBR's 95th-percentile RTT under load (the base RTT and the queueing delay) lower through the deep "
    "buffers (two and four BDPs), and its goodput higher through the shallowest one (a quarter of a BDP); our "
    "path has no random loss",
)
FQ_CODEL_LATENCY = _claim(
    FQ_CODEL,
    "This memo presents the FQ-CoDel hybrid packet scheduler and Active Queue Management (AQM) algorithm, a "
    "powerful tool for fighting bufferbloat and reducing latency.",
    Regrouped(
        Better(
            "rtt_p95_ms",
            Group(where={"qdisc": "fq_codel"}),
            Group(where={"qdisc": "pfifo"}),
            higher=False,
            worth=SUBSTANTIAL,
        ),
        "drop-tail -> fq_codel",
    ),  # fmt: skip
    f"'a powerful tool for ... reducing latency' read as CUBIC's 95th-percentile RTT under load through a "
    f"buffer of four BDPs lower by at least {SUBSTANTIAL:.0%} with fq_codel holding it than with drop-tail",
)


def timeout(trial: Trial) -> float:
    """A trial's limit: its flow's 15 s, iperf3's start and end, and the flows' ends draining."""
    return 90.0


def _figure(name: str, title: str, y: str, **kw: Any) -> Figure:
    spec: dict[str, Any] = {
        "x": "queue",
        "levels": BUFFERS,
        "fixed": PATH,
        "series": (CUBIC, RENO, BBR),
        "quick_levels": ("8p", "132p"),
        "x_label": f"bottleneck buffer (packets; {BDP_PACKETS} is one BDP)",
        "x_log": True,
        **kw,
    }
    return Figure(
        variation=VARIATION,
        study="bufferbloat",
        name=name,
        title=title,
        workload="long_flow",
        y=y,
        deviations=DEVIATIONS,
        trial_timeout=timeout,
        trials=4,
        quick_trials=2,
        **spec,
    )


FIGURES = (
    _figure(
        "delay",
        "RTT under load by bottleneck buffer ({rate}, RTT {rtt})",
        "rtt_p95_ms",
        y_label="RTT under load, 95th percentile (ms)",
        finding="Cardwell et al.: loss-based congestion control keeps large buffers full (bufferbloat)",
        claims=(KEEPS_FULL,),
    ),
    _figure(
        "goodput",
        "Goodput by bottleneck buffer ({rate}, RTT {rtt})",
        "goodput_mbit",
        y_label="goodput (Mbit/s)",
        trials_of="delay",
        finding="Cardwell et al.: through small buffers loss-based congestion control reads loss as congestion "
        "and gets low throughput",
        claims=(SHALLOW_LOW,),
    ),
    _figure(
        "tradeoff",
        "Goodput against RTT under load, every buffer ({rate}, RTT {rtt})",
        "goodput_mbit",
        trials_of="delay",
        drawing=tradeoff.draw("rtt_p95_ms", "RTT under load, 95th percentile (ms)", "goodput (Mbit/s)"),
        finding="Cardwell et al.: against Reno and CUBIC, BBR gets substantially more through shallow buffers and "
        "queues substantially less in deep ones (a point per buffer: up and to the left is better)",
        claims=(DRAFT_DEEP,),
    ),
    Figure(
        variation=VARIATION,
        study="bufferbloat",
        name="aqm",
        title="fq_codel against drop-tail, a buffer of four BDPs ({rate}, RTT {rtt}, CUBIC)",
        workload="long_flow",
        x="qdisc",
        levels=("pfifo", "fq_codel"),
        y="rtt_p95_ms",
        # its jitter is the study's variation (VARIATION), in netem's rate form in the lane
        fixed={**{k: v for k, v in PATH.items() if k != "jitter"}, "queue": "132p"},
        series=(CUBIC,),
        trials=4,
        quick_trials=2,
        x_label="the bottleneck buffer's discipline (the stock-kernel lane: run.sh --vm)",
        y_label="RTT under load, 95th percentile (ms)",
        deviations=DEVIATIONS,
        trial_timeout=timeout,
        finding="RFC 8290: FQ-CoDel fights bufferbloat and reduces latency",
        claims=(FQ_CODEL_LATENCY,),
    ),
)
# The derived figures results/reference keeps (netrepro.studykit.kept): none of this study's.
KEPT: tuple[Kept, ...] = ()
