"""`python -m netrepro`: the command line run.sh calls."""

import sys

from netrepro.front.cli import main

sys.exit(main())
