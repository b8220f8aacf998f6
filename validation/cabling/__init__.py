"""Cabling: the physical build against the design, on both fabrics, before anything is configured (issue #37).

model (End, Cable, Link), plan (the design from the inventory), parse_lldp and parse_ib (dumps into Links),
dumps (format detection, .gz), check (each cable OK / MISWIRED / MISSING / DEGRADED, and UNEXPECTED links), cli
(``python -m validation cabling plan | parse | check``). docs/cabling.md is the task page.
"""
