from preflight_rules import *
