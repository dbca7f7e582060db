"""netrepro: reproduce network papers on an emulated path, with provenance.

The shared core, in two layers.  The ground, used by everything:
`units` (typed quantities), `path` (the path model), `proc` (commands and
processes), `ledger` (undo records), `kernel` (feature probes), `parsers`,
`results` (files and provenance).  The orchestration on top, which may use
`topologies/`, `servers/` and `kmod/`: `verify`, `doctor` and `cli`.  Nothing
in the ground imports anything above it.
"""

__version__ = "0.1.0"
