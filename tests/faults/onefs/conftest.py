"""The PowerScale suite's fixtures: a throw-away CA and the OneFS API simulator on 127.0.0.1."""

from powerscale.conftest import pki, sim  # noqa: F401
