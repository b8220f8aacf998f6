from cumulus_fabric import *
