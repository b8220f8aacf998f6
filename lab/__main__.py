"""`python -m lab`: see lab/cli.py and lab/README.md."""

import sys

from lab.cli import main

sys.exit(main())
