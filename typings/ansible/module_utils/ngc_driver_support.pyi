from ngc_driver_support import *
