from cumulus_switch import *
