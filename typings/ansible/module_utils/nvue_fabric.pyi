from nvue_fabric import *
