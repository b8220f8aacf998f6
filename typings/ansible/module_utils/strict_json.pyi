from strict_json import *
