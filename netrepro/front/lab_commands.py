"""The commands of a lab and of the machine: `shell` and `check` (a lab on its own, measured),
`doctor` (what the machine offers), `cc` (a congestion control loaded and tuned by hand) and `clean`
(what dead runs left undone).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from ground import figurelock, kernel, undo
from ground.ledger import Ledger
from ground.path import PathSpec
from ground.units import QuantityError
from kmod import loader
from netrepro.front.options import parse_path, parse_topology
from netrepro.lanes import doctor
from netrepro.runner import preflight, verify
from topologies import topology
from topologies.lab import Lab

log = logging.getLogger("netrepro")


def cmd_doctor(args: argparse.Namespace) -> int:
    doc = doctor.report()
    print(json.dumps(doc, indent=2) if args.json else doctor.render(doc))
    return 0


def _cc_values(args: argparse.Namespace) -> dict[str, int]:
    """--cc-param checked against --cc's variant (input, refused before anything is built)."""
    if args.cc in loader.ALGORITHMS:
        return loader.parse_params(loader.ALGORITHMS[args.cc], dict(_pairs("--cc-param", args.cc_param)))
    if args.cc_param:
        raise QuantityError("--cc-param", " ".join(args.cc_param), f"{args.cc} has no netrepro parameters")
    return {}


def _lab(
    args: argparse.Namespace, path: PathSpec, topo: topology.Topology, run_ledger: Ledger, values: dict[str, int]
) -> Lab:
    """The lab of `shell` and `check`, with the variant or port of --cc loaded and tuned first (the
    kernel's own, e.g. bbr, its module loaded where it is not)."""
    cc = args.cc
    if args.cc in loader.ALGORITHMS:
        algorithm = loader.load(args.cc, run_ledger, args.impl)
        cc = algorithm.registered
        print(
            f"*** {args.cc} ({algorithm.impl}, as {cc}): "
            f"{json.dumps(algorithm.set(**values) if values else algorithm.read())}"
        )
    else:
        loader.load_kernel_own(cc, run_ledger)
    return Lab(path, run_ledger, shaper=args.shaper, seed=args.seed, cc=cc, topology=topo, switch=args.switch)


def _describe(lab: Lab) -> str:
    """What the user has: the path, the shape, each host's address, each pair's round trip."""
    hosts = ", ".join(f"{n.name} ({lab.ip(n.name)})" for n in lab.network.nodes if n.kind == topology.HOST)
    pairs = "".join(f"\n*** {p.client} <- {p.server}: {lab.network.view(p)}" for p in lab.pairs)
    switch = f", switches: {lab.switch_kind}" if lab.switch_kind != "none" else ""
    return f"*** {lab.network.shape} via {lab.backend}{switch}; hosts {hosts}{pairs}"


def cmd_shell(args: argparse.Namespace) -> int:
    """The lab in Mininet's CLI; with --script, its lines run, the first that fails ending it (exit 1)."""
    from mininet.cli import CLI
    from mininet.log import setLogLevel

    from netrepro.front import shell_script

    path, topo = parse_path(args), parse_topology(args)
    # read and parsed before anything is built: a path that cannot be is refused (exit 2)
    script = shell_script.read_script(args.script) if args.script is not None else None
    values = _cc_values(args)
    preflight.preflight(preflight.lab_needs("shell", args.cc, args.shaper, args.impl, args.qdisc))
    with Ledger() as run_ledger, _lab(args, path, topo, run_ledger, values) as lab:
        setLogLevel("output")
        print(_describe(lab))
        if script is not None:
            # Mininet's CLI polls its stdin while a node's command runs (waitForNode): one at end of
            # file (/dev/null, a closed terminal) is always readable, and the poll spins a whole core.
            # A pipe that stays open and empty never is: the poll waits for the node's output only.
            read_end, write_end = os.pipe()
            try:
                with open(read_end, encoding="utf-8") as nothing:
                    # a line that fails raises ScriptFailed: the `with` above tears the lab down, exit 1
                    shell_script.ScriptedCLI(lab.net, nothing, str(args.script), script)
            finally:
                os.close(write_end)
        else:
            CLI(lab.net)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    path, topo = parse_path(args), parse_topology(args)
    values = _cc_values(args)
    preflight.preflight(preflight.lab_needs("check", args.cc, args.shaper, args.impl, args.qdisc))
    with Ledger() as run_ledger, _lab(args, path, topo, run_ledger, values) as lab:
        print(_describe(lab).replace("***", "checking", 1) + " ...", file=sys.stderr)
        result = verify.verify(lab)
        queue_kind = lab.bottleneck_queue().kind
    if args.json:
        doc = {
            "path": path.describe(),
            "network": lab.network.describe(),
            "backend": lab.backend,
            "switch": lab.switch_kind,
            "bottleneck_qdisc": queue_kind,  # as tc shows it: the buffer's discipline
        }
        print(json.dumps({**doc, **result.as_dict()}, indent=2))
    else:
        for c in result.checks:
            print(c.line())
        print(f"{'all within tolerance' if result.ok else 'OUT OF TOLERANCE'} ({result.seconds:.1f} s)")
    # check exists to answer "is the path what was asked for": no is exit 1.
    return 0 if result.ok else 1


def _pairs(option: str, pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise QuantityError(option, pair, "give KEY=VALUE")
        out[key] = value
    return out


def cmd_cc(args: argparse.Namespace) -> int:
    if args.action == "list":
        available, allowed = kernel.congestion_controls()
        for v in loader.ALGORITHMS.values():
            params = ", ".join(f"{p.name} {p.low}..{p.high} (default {p.default}, {p.unit})" for p in v.params)
            state = "registered" if v.name in available else "not loaded"
            kind = "port" if v.port else "variant"
            print(f"{v.name:<11} {kind:<8} {state:<11} {params or '(no parameters)'}")
        print(f"kernel: available {' '.join(available)}; allowed in namespaces {' '.join(allowed)}")
        return 0
    if args.name not in loader.ALGORITHMS:
        given = f"{args.name!r} is not a netrepro variant or port: " if args.name else ""
        raise loader.CongestionControlInputError(f"{given}name one of {', '.join(loader.ALGORITHMS)}")
    variant = loader.ALGORITHMS[args.name]
    values = loader.parse_params(variant, dict(_pairs("cc", args.params)))
    if args.action == "load":
        # Not unwound here: `cc unload` or `clean` ends the algorithm's stay.
        held = Ledger(purpose=f"cc load {args.name}")
        algorithm = loader.load(args.name, held, args.impl)
        print(json.dumps(algorithm.set(**values) if values else algorithm.read()))
        print(
            f"{args.name} loaded as {algorithm.impl} (sockets use {algorithm.registered}); "
            f"`run.sh cc unload {args.name}` (or `run.sh clean`) removes it"
        )
        return 0
    if args.action == "set":
        print(json.dumps(loader.attach(args.name).set(**values)))
        return 0
    # Only what `cc load` left: other dead runs' ledgers are for `clean`.
    lines = undo.clean(only=undo.with_purpose(f"cc load {args.name}"))
    print("\n".join(lines) if lines else f"no ledger holds {args.name}; nothing unloaded")
    return 0 if lines else 1


def cmd_clean(args: argparse.Namespace) -> int:
    lines = undo.clean() + figurelock.remove_stale()
    print("\n".join(lines) if lines else "nothing to clean")
    return 1 if any("failed" in line for line in lines) else 0
