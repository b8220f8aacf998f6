from dgx_sysctl import *
