"""The workloads of the studies: real servers and clients on the lab's hosts.

  apache    Apache httpd per run: generated configuration, run directory and
            certificate; HTTP/1.1, h2c (prior knowledge) and h2 over TLS
  content   single objects of exact sizes and the page set of study cubicplus
  hosttcp   per-host TCP: initcwnd/initrwnd routes, sysctls, congestion control
  clients   curl downloads, h2load page loads and bulk, the protocol checks
  bursts    the burst client: requests after idle periods on one connection
  iperf     iperf3 cross traffic
  capture   tcpdump as an independent clock
  parsers   curl, h2load and pcap output to typed numbers

Everything here builds on the ground (ground.proc, ledger, units) only.
"""
