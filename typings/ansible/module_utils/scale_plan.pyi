from scale_plan import *
