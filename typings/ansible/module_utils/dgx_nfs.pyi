from dgx_nfs import *
