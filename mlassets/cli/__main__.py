"""``python -m mlassets.cli``: the ``mlassets`` command."""

import sys

from mlassets.cli import main

sys.exit(main())
