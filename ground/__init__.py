"""The ground every other folder stands on; it imports nothing of the project above it.

  errors        the exception tree: user, setup and trial errors
  units         typed quantities (Duration, Rate, Probability, Queue), parsed once
  path          the emulated path: rate, delay, loss, queue, frame sizes
  proc          commands and processes, in a host's namespace, by argument lists
  ledger        what a run changed, recorded before it changes it, and undone
  cgroups       the run's own cgroup, killed whole
  modules       the kernel's loadable modules: what is loaded, and rmmod of what was loaded since
  kernel        what the running kernel offers (features, modules, tools), probed under the ledger
  results       result files written whole, and their provenance
  trials        the trial log: one CSV row per trial
  figurelock    one run at a time per figure CSV
  parsers       ping and iperf3 output to typed numbers
  tcpprobe      the tcp:tcp_probe tracepoint, every ACK of the chosen ports
  cwnd          window statistics and models over tcp_probe samples
  latency       RTT under load: the SRTT a trial's sender saw, and the queueing delay over the base RTT
  logs          the project's loggers, the command log and the per-run log file
  progress      the progress bar
  machinestate  a snapshot of everything a run may change, to compare

Above it: `topologies/`, `servers/` and `kmod/`, each using only the
ground; then the study kit (`netrepro/studykit/`), the studies (`expts/`),
the runner, its engine, the lanes and the front (netrepro/__init__.py).
`lint-imports` (run by `run.sh test`) and tests/unit/test_layers.py check
the layers.
"""
