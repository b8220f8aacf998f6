"""NVUE REST API simulator (Cumulus Linux 5.x) for the SN3700V storage switches: `python -m lab.nvue_sim`."""
