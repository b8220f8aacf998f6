from preflight_schema import *
