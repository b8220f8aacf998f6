from cumulus_ifupdown import *
