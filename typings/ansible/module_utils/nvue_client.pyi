from nvue_client import *
