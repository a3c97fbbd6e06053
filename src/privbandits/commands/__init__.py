"""Command groups of the ``privbandits`` command line, one module each."""
