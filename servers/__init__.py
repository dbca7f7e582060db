"""Servers and clients of the studies' workloads (Apache httpd, h2load, curl, iperf3)."""
