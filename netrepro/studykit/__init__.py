"""The study kit: the vocabulary a study is written in.

`params` (the keys a trial may have, each declared once), `spec` (a figure
as data: workload, x factor, series, fixed parameters, trials), `claims`
(the source's sentences and the tests that decide them on the trials) and
`plot` (from rows to points, the figure and its table).  `expts/` and study
files are written in these words; the kit runs nothing and imports only
`ground/` and `topologies/`'s shapes.
"""
