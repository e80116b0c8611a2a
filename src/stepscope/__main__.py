"""``python -m stepscope``: the ``stepscope`` command, for where the console script is not on PATH."""

import sys

from stepscope.cli import main

sys.exit(main())
