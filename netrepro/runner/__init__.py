"""The runner: a figure's trials run on this machine, verified, written.

`sweep` (one lab, trials in a seeded order, resume, the figure drawn and
judged), `session` (what a lab's trials share: Apache, the loaded variants,
tcp_probe, the hosts' settings), `workloads` (one trial of a workload as a
row), `verify` (the path measured against what was asked), `preflight`
(what a run needs, checked before anything is built), `plan` (a run's grid
and estimate before it runs), `derive` (a figure as `--set`, `--vary` and
`--series` change it) and `shards` (parts of a figure's trials, and the
merge of their CSVs).  Where trials run elsewhere, an engine is passed in
(`sweep.Engine`); the runner imports none.
"""
