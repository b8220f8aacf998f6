from mlnxos_fabric import *
