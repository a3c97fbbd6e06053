"""Empirical privacy auditing: high-confidence lower bounds on epsilon from distinguishing tests.

Three modules (the public names are re-exported here):

* :mod:`~privbandits.privacy.audit.statistics`: Clopper-Pearson bounds, the epsilon lower bound
  of a test, choosing and evaluating threshold tests;
* :mod:`~privbandits.privacy.audit.driver`: :func:`audit_spec` (draw statistics under both
  neighbouring inputs, pick the test on the training half, evaluate it on the held-out half),
  :func:`audit` (any mechanism object or release function on one pair), :func:`audit_mechanism`
  and :func:`run_all` (catalog entries, ``privbandits audit NAME | --all``);
* :mod:`~privbandits.privacy.audit.catalog`: :data:`AUDITABLE`, every mechanism and protocol of the
  privacy layer at a stated parameter point, with its under-noised variant.

:class:`AuditSpec` and :class:`AuditResult` are in :mod:`~privbandits.privacy.audit.spec`.  The
algorithms' client code paths are audited by :mod:`privbandits.auditing`, which sits above the
algorithms (the privacy layer never imports them).
"""

from privbandits.privacy.audit.catalog import AUDITABLE
from privbandits.privacy.audit.driver import (
    DEFAULT_CHUNK,
    audit,
    audit_mechanism,
    audit_spec,
    run_all,
)
from privbandits.privacy.audit.spec import AuditResult, AuditSpec, StatisticSampler
from privbandits.privacy.audit.statistics import (
    MAX_CANDIDATES,
    ThresholdTest,
    clopper_pearson,
    epsilon_lower_bound,
    evaluate_threshold_test,
    select_threshold_test,
)

__all__ = [
    "AUDITABLE",
    "DEFAULT_CHUNK",
    "MAX_CANDIDATES",
    "AuditResult",
    "AuditSpec",
    "StatisticSampler",
    "ThresholdTest",
    "audit",
    "audit_mechanism",
    "audit_spec",
    "clopper_pearson",
    "epsilon_lower_bound",
    "evaluate_threshold_test",
    "run_all",
    "select_threshold_test",
]
