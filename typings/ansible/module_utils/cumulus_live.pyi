from cumulus_live import *
