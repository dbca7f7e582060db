"""The front: what a user types and reads.

`cli` (the parser run.sh hands over to, the dispatch, what is said on error),
the commands by what they work on (`lab_commands`: shell, check, doctor, cc,
clean; `figure_commands`: run, merge, list, workloads, report;
`project_commands`: bench, test), the options that shape a lab (`options`),
`report` (one page of every stored figure, and the findings), `studyfile`
(studies declared in TOML files, read into the study kit's figures),
`reference` (the lists in docs/ made from the code) and `checks` (files the
command line is given, refused in one line when unfit).
"""
