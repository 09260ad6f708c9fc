"""``python -m quantcodec``: the same command as ``quantcodec``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
