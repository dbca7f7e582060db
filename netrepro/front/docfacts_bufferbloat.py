"""Study bufferbloat's numbers on docs/studies/bufferbloat.md, computed from its stored rows (netrepro.front.docrows).

The delay run's trials and commit; by buffer, each congestion control's median RTT under load (95th
percentile) and goodput; the queueing delay a full buffer would add beside what each control's median
trial added; and the ratios the claims read; the lane's aqm run, CUBIC's RTT under load with fq_codel and with
drop-tail.  netrepro.front.docnumbers gathers them with the other
studies' facts; a tree without the study's rows gives none.
"""

from __future__ import annotations

from ground.path import FRAME
from netrepro.front.docrows import Facts, Stored, figure_facts, levels, median, ms, num, table

RUN = "bufferbloat/delay"
AQM = "bufferbloat/aqm"  # the stock-kernel lane's: fq_codel against drop-tail at four BDPs
SERIES = ("CUBIC", "Reno", "BBR")
RATE_BPS = 10e6  # the study's bottleneck (expts/bufferbloat.py PATH)


def drain_ms(buffer: str) -> float:
    """The delay a full drop-tail buffer of `buffer` ("66p") adds: its frames at the bottleneck's rate."""
    return int(buffer.removesuffix("p")) * FRAME * 8 / RATE_BPS * 1e3


def bufferbloat_facts(stored: Stored) -> Facts:
    if not (stored.tree / f"{RUN}.csv").is_file():
        return {}
    rows = stored.rows(RUN)
    facts = figure_facts(stored, RUN, "bufferbloat.delay")
    body = []
    for q in levels(rows, "queue"):
        p95 = [median(rows, "rtt_p95_ms", queue=q, series=s) for s in SERIES]
        queued = [median(rows, "queueing_delay_p50_ms", queue=q, series=s) for s in SERIES]
        goodput = [median(rows, "goodput_mbit", queue=q, series=s) for s in SERIES]
        body.append([q, ms(drain_ms(q)), *(ms(v) for v in queued), *(ms(v) for v in p95), *(num(v) for v in goodput)])
        facts[f"bufferbloat.bbr_over_cubic_p95_{q}"] = f"{p95[2] / p95[0]:.2f}"
        facts[f"bufferbloat.bbr_over_cubic_goodput_{q}"] = f"{goodput[2] / goodput[0]:.2f}"
    head = [
        "buffer",
        "full buffer (ms)",
        *(f"{s} queueing p50 (ms)" for s in SERIES),
        *(f"{s} RTT p95 (ms)" for s in SERIES),
        *(f"{s} goodput (Mbit/s)" for s in SERIES),
    ]
    facts["bufferbloat.delay.table"] = table(head, body)
    if (stored.tree / f"{AQM}.csv").is_file():
        facts |= aqm_facts(stored)
    return facts


def aqm_facts(stored: Stored) -> Facts:
    """The lane's aqm run: its trials, commit, and CUBIC's median p95 RTT under load with each discipline."""
    rows = stored.rows(AQM)
    facts = figure_facts(stored, AQM, "bufferbloat.aqm")
    p95 = {q: median(rows, "rtt_p95_ms", qdisc=q) for q in ("pfifo", "fq_codel")}
    facts |= {f"bufferbloat.aqm.{q}_p95": ms(v) for q, v in p95.items()}
    facts["bufferbloat.aqm.ratio"] = f"{p95['fq_codel'] / p95['pfifo']:.2f}"
    return facts
