from shared_values import *
