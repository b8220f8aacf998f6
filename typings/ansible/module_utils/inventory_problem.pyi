from inventory_problem import *
