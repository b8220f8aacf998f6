from shell_probe import *
