from mlnxos_client import *
