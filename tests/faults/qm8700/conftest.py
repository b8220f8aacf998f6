"""The QM8700 suite's fixtures: a throw-away CA and a pair of MLNX-OS simulators on 127.0.0.1."""

from fabric_qm8700.conftest import host_key, pair, password_file, pki  # noqa: F401
