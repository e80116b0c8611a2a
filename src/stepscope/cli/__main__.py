"""``python -m stepscope.cli``: the console script's ``main``."""

import sys

from stepscope.cli import main

sys.exit(main())
