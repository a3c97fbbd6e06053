"""The drivers that run an algorithm on an environment (the documentation's Concepts: engines).

* :mod:`~privbandits.engine.reference`: message level, one round at a time through the role
  objects, checking the trust boundary every round; runs every algorithm.
* :mod:`~privbandits.engine.compiled`: one compiled loop over rounds and replications calling the
  same compiled steps as the reference driver (algorithms with a kernel); for shuffle algorithms
  whose client serves a batch's users together, the batch path of :mod:`~privbandits.engine.batches`.
* :mod:`~privbandits.engine.aggregate`: the exact batch path of batched elimination algorithms on
  fixed action sets (releases drawn exactly in distribution).

:func:`privbandits.simulate.simulate` picks one (``engine="auto"``) or runs the one asked for.
"""

from privbandits.engine.recorder import Recorder

__all__ = ["ENGINES", "Recorder"]

#: Engine names accepted by :func:`privbandits.simulate.simulate`.
ENGINES: tuple[str, ...] = ("auto", "reference", "compiled", "aggregate")
