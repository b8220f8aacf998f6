"""OneFS Platform API simulator for the powerscale-dgx-ra lab and tests (standard library only).

Run it as ``python3 -m onefs_sim`` from its parent directory (the lab VM, /opt/onefs-sim) or as
``python -m lab.onefs_sim`` from the repository root. ``--help`` lists the options.
"""
