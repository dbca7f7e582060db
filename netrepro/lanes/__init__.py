"""Side lanes: what runs beside the figures rather than as one.

`doctor` (what this kernel and userland offer), `vm` (the stock-kernel
lane: a command inside the distribution's own kernel under QEMU), `bench`
(benchmarks that report numbers and judge nothing), `soak` (runs killed at
random moments must leave nothing) and `loopback_sshd` (an sshd of its own
for the SSH launcher on one machine).
"""
