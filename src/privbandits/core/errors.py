"""Exception hierarchy of privbandits.

Every error the library raises on purpose is a :class:`PrivbanditsError`, so callers can catch
library errors without catching programming errors.  Messages name the offending parameter, the
value received and what is allowed, so that the fix is obvious from the message alone.
"""

from __future__ import annotations


class PrivbanditsError(Exception):
    """Base class of every error raised on purpose by privbandits."""


class ValidationError(PrivbanditsError, ValueError):
    """A parameter or input is outside its allowed range, has the wrong shape or type."""


class ParameterError(ValidationError):
    """A named parameter has a value outside its allowed values.

    The parameter travels as data, so that a caller can map the error back to where the value came
    from (e.g. a configuration file's key path) without reading the message.

    Attributes
    ----------
    key : str
        The parameter's name.
    value : object
        The value received.
    allowed : str
        The allowed values in words (e.g. ``"(0, inf)"``), ``""`` when the check is about the type.
    """

    def __init__(self, message: str, *, key: str, value: object = None, allowed: str = "") -> None:
        super().__init__(message)
        self.key = key
        self.value = value
        self.allowed = allowed

    def __reduce__(self) -> tuple[object, ...]:  # keep the data across processes
        return (_parameter_error, (str(self), self.key, self.value, self.allowed))


def _parameter_error(message: str, key: str, value: object, allowed: str) -> ParameterError:
    return ParameterError(message, key=key, value=value, allowed=allowed)


class ConfigError(ValidationError):
    """An experiment configuration is invalid (unknown key, bad value, missing field)."""


class PrivacyError(PrivbanditsError):
    """A privacy requirement cannot be met (budget exhausted, calibration invalid, ...)."""


class TrustBoundaryError(PrivacyError):
    """Raw user data was about to cross a trust boundary (see the documentation's Concepts: trust models)."""


class DataBoundError(ValidationError):
    """Data violates a declared norm bound that the privacy guarantee relies on."""


class MissingDataError(ValidationError):
    """A data set the user must supply (not bundled, no network) is not where it was said to be."""


class ResultsStoreError(PrivbanditsError):
    """The results database is unreadable, locked, or inconsistent."""


class UnknownNameError(ValidationError, KeyError):
    """A name (algorithm, environment, preset, mechanism) is not registered."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class NotResetError(PrivbanditsError):
    """A quantity that depends on the problem (calibration, guarantee, state) was asked for before
    the algorithm was reset on a problem."""
