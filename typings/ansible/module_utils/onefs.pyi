from onefs import *
