"""Privacy layer: mechanisms, accounting, shuffle protocols, tree aggregation, auditing."""

from privbandits.privacy.guarantee import NON_PRIVATE, TRUST_MODELS, PrivacyGuarantee

__all__ = ["NON_PRIVATE", "TRUST_MODELS", "PrivacyGuarantee"]
