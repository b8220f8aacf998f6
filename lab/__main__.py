"""`python -m lab`: see lab/cli.py and docs/lab.md."""

import sys

from lab.cli import main

sys.exit(main())
