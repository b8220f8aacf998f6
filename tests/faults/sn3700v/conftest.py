"""The SN3700V suite's fixtures: a throw-away CA and NVUE simulators on 127.0.0.1."""

from fabric_sn3700v.conftest import pki, start_sim  # noqa: F401
