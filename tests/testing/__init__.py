"""Tests of the shipped conformance checks (privbandits.testing) and of the adversarial-server audit."""
