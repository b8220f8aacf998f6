"""Entry point: python -m validation."""

import sys

from .cli import main

sys.exit(main())
