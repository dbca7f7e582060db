"""Engines: a figure's trials on other machines, passed into the runner.

`cluster` (the coordinator: the engine the options ask for, its Dask
client, and the one writer of the rows), `agree` (one setup for every host
of a run, agreed before its first trial), `ssh_cluster` (a cluster it
launches over SSH, each host running `node`, with TLS of the run's own from
`tls`, held in memory), `local` (labs side by side on this machine) and
`worker` (what a worker runs: one path setting's trials on a lab of its
own, rows sent home).  They use the runner; the runner does not import them.
"""
