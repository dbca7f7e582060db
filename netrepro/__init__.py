"""netrepro: reproduce network papers on an emulated path, with provenance.

The orchestration, on top of every other folder, in rooms by tier (each may
use the ones below it, never one above; pyproject.toml's contract):

  front      the commands, the report, study files
  lanes      doctor, the stock-kernel lane, benchmarks, the soak
  engine     a figure's trials on a Dask cluster (passed into the runner)
  runner     the sweep, the session, workloads, verification, plans
  (expts/)   the studies, written in the study kit's words
  studykit   figures, keys, claims and drawing as data

It stands on `ground/` (units, ledger, processes, kernel probes, result
files) and on the domain folders `topologies/`, `servers/` and `kmod/`,
none of which imports it.
"""

__version__ = "0.1.0"
