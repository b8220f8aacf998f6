from dgx_ngc import *
