from powerscale_inventory import *
