"""Engines: a figure's trials on other machines, passed into the runner.

`cluster` (the coordinator: a Dask cluster it launches over SSH or one it
is given, TLS of the run's own, and the one writer of the rows) and
`worker` (what a worker runs: one path setting's trials on a lab of its
own, rows sent home).  They use the runner; the runner does not import
them.
"""
