"""The local lab: qemu VMs (dgx, powerscale, sn3700v) and host-side simulators, driven by `python -m lab`."""
