"""Each validation stage's judge: paths, nccl (and its fabric sanity, sysinfo), fio, ddp (see validation/verdict.py)."""
