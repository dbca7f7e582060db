"""`python -m netrepro`: the command line run.sh calls."""

import sys

from netrepro.cli import main

sys.exit(main())
