"""The front: what a user types and reads.

`cli` (the commands run.sh hands over), `report` (one page of every stored
figure, and the findings), `studyfile` (studies declared in TOML files,
read into the study kit's figures) and `checks` (files the command line is
given, refused in one line when unfit).
"""
