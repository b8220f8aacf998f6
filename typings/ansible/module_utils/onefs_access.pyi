from onefs_access import *
