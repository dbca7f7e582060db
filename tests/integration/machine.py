"""The machine snapshot the root tests compare (it lives in netrepro.machinestate, beside the soak)."""

from netrepro.machinestate import MachineState, differences, snapshot

__all__ = ["MachineState", "differences", "snapshot"]
