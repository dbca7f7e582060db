"""Congestion-control variants: kernel modules, BPF struct_ops programs, and their loader."""
