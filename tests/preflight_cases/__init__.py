"""Invalid inventories, one defect each, that preflight must reject (run: python -m tests.preflight_cases)."""
