"""`python -m transpile ...`: see transpile/cli.py."""
import sys

from .cli import main

sys.exit(main())
