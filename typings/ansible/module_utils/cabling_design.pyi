from cabling_design import *
