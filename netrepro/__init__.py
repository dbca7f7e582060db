"""netrepro: reproduce network papers on an emulated path, with provenance.

The orchestration, on top of every other folder: `sweep` (the runner),
`verify` (the path measured against what was asked), `workloads`, `plot`,
`spec` and `studyfile` (figures as data, in `expts/` or in TOML files),
`preflight`, `doctor`, `vm` (the stock-kernel lane), `bench` and `soak`,
and `cli`.  It stands on `ground/` (units, ledger, processes, kernel probes,
result files) and on the domain folders `topologies/`, `servers/` and
`kmod/`, none of which imports it.
"""

__version__ = "0.1.0"
