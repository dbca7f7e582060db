"""Topologies: the emulated lab and the command builders and backends that shape it."""
