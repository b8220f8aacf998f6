from dgx_readiness import *
