"""``python -m precision_tool``."""

import sys

from precision_tool.cli import main

sys.exit(main())
