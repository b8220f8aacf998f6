from cumulus_release import *
