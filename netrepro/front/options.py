"""The options that shape a lab, shared by the commands that build one (`shell`, `check`), and the
budget of a run's looks (`--until-decided`, `until_decided`).

The path's options are made from its keys' one declaration (netrepro.studykit.params.PATH_PARAMS);
the topology's are Topology.parse's.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Sequence

from ground.errors import UserError
from ground.path import PathSpec
from ground.units import QuantityError
from kmod import loader
from netrepro.runner.looks import UntilDecided
from netrepro.studykit import params
from netrepro.studykit.spec import Figure
from topologies import topology

log = logging.getLogger("netrepro")


IMPL_HELP = "kernel (the kernel's own), lkm (a module) or bpf (netrepro's BPF program); default: the loader's choice"


def path_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group("path")
    for key in params.PATH_PARAMS:  # each declared once (netrepro.studykit.params), with its default
        form = key.form[1] if key.form else (key.allowed(here=False) if key.choices else f"{key.low:g} to {key.high:g}")
        default = f" (default {key.default})" if key.default is not None else ""
        g.add_argument(key.option, default=key.default, help=f"{key.help}: {form}{default}".replace("%", "%%"))
    g.add_argument("--shaper", default="auto", choices=["auto", "netem", "delayline"])
    g.add_argument("--seed", type=int, default=1, help="seed of the emulated loss")
    g.add_argument(
        "--cc", default="cubic", help="congestion control of both hosts (the kernel's, a netrepro variant or port)"
    )
    g.add_argument("--cc-param", action="append", default=[], metavar="KEY=VALUE", help="a variant's parameter")
    g.add_argument("--impl", choices=loader.IMPLS, default=None, help=IMPL_HELP)
    return p


def topology_options() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(add_help=False)
    g = p.add_argument_group(
        "topology (topologies/topology.py; the path options are every pair's and the bottleneck's)"
    )
    g.add_argument("--topo", default="path", help=f"the shape: {', '.join(topology.SHAPES)} (default path)")
    g.add_argument("--pairs", type=int, default=None, help="dumbbell: client/server pairs (client1..N, server1..N)")
    g.add_argument("--rtts", default=None, metavar="RTT1,RTT2,...", help="dumbbell: each pair's RTT, e.g. 40ms,120ms")
    g.add_argument("--routers", type=int, default=None, help="chain: routers r1..rK (default 2)")
    g.add_argument(
        "--cross",
        action="store_true",
        help="cross-traffic hosts xsender (at the server's router) and " "xreceiver (at the client's)",
    )
    g.add_argument(
        "--switch",
        default="auto",
        help="ovs, bridge or auto (Open vSwitch where the kernel has its "
        "datapath and the shaper is netem; else the Linux bridge)",
    )
    g.add_argument(
        "--link",
        action="append",
        default=[],
        metavar="A-B:KEY=VALUE,...",
        help="refine a link (A>B: one direction): rate, delay, loss, queue, e.g. r1-r2:rate=11mbit,"
        "delay=250ms,queue=15p",
    )
    return p


def parse_path(args: argparse.Namespace) -> PathSpec:
    given = {name: getattr(args, name) for name in params.PATH_KEYS}
    return PathSpec.parse(**{name: value for name, value in given.items() if value is not None})


def parse_topology(args: argparse.Namespace) -> topology.Topology:
    return topology.Topology.parse(
        args.topo, pairs=args.pairs, rtts=args.rtts, routers=args.routers, cross=args.cross, links=args.link
    )


def until_decided(args: argparse.Namespace, figures: Sequence[Figure]) -> UntilDecided | None:
    """`--until-decided TRIALS [--until-hours H]` as a typed budget, checked against each figure's declared
    trials and against the options it does not go with before anything is made: a UserError that names what
    was typed and what is allowed.  None without --until-decided."""
    trials, hours = args.until_decided, args.until_hours
    if trials is None:
        if hours is not None:
            raise UserError(f"--until-hours {hours:g}: the time budget of --until-decided TRIALS; give that too")
        return None
    if hours is not None and not hours > 0:
        raise QuantityError("--until-hours", hours, "a number of hours above 0")
    given = [("--shard", args.shard), ("--jobs", args.jobs), ("--hosts", args.hosts), ("--scheduler", args.scheduler)]
    others = [flag for flag, value in given if value is not None]
    if others:
        raise UserError(
            f"--until-decided {trials} and {others[0]}: its looks run their trials on this machine's own lab, "
            f"so far without {', '.join(f for f, _ in given)}; give one of the two"
        )
    until = UntilDecided(trials, hours)
    for fig in figures:
        until.plan(fig.full_name, fig.trial_count(args.quick, args.trials))
    return until
