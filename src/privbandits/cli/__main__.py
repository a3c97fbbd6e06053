"""``python -m privbandits.cli``: the ``privbandits`` command line."""

from privbandits.cli import main

main()
