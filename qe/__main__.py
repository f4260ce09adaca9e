"""``python -m qe`` runs the command line."""

import sys

from qe.cli import main

sys.exit(main())
