"""Helpers of the conformance suite (``tests/test_conformance.py``): the cases every registered
algorithm declares, the small environments they run on, and spies on the trust boundary."""
