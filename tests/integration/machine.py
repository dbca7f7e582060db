"""The machine snapshot the root tests compare (it lives in ground.machinestate, beside the soak)."""

from ground.machinestate import MachineState, differences, snapshot, wait_until_as_before

__all__ = ["MachineState", "differences", "snapshot", "wait_until_as_before"]
