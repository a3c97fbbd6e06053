"""Spies of the conformance suite: the shipped ones (:mod:`privbandits.testing.spies`)."""

from privbandits.testing.spies import BoundaryLog, after_reset, record_chunks, spy_on_roles

__all__ = ["BoundaryLog", "after_reset", "record_chunks", "spy_on_roles"]
