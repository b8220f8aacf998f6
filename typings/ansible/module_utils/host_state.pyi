from host_state import *
