from preflight_targets import *
