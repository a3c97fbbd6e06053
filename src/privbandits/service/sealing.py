"""Reports sealed to the server's public key, so a shuffler in between cannot read them.

A libsodium *sealed box* (X25519 + XSalsa20-Poly1305 with an ephemeral sender key, through
PyNaCl) encrypts a report for the server's public key: the shuffler forwards the ciphertext
without learning the report, and the ciphertext carries nothing about its sender.  The server
publishes its public key in ``GET /v1/model`` (``public_key``, base64).

A device pads the JSON text of its report with spaces to the size of the longest report of its
format (:meth:`privbandits.service.reports.ReportFormat.sealed_size`) before sealing, so every
sealed report of a deployment has the same size: the size says nothing about the values, and the
shuffler, which cannot open a report, checks its envelope exactly (:func:`check_envelope`: base64
of ``SEAL_OVERHEAD + size`` bytes) and quarantines anything else.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from privbandits.core.errors import ValidationError

__all__ = ["SEAL_OVERHEAD", "SealingError", "check_envelope", "keygen", "open_sealed", "seal"]

#: Bytes a sealed box adds to its plaintext: the sender's ephemeral X25519 key (32) and the
#: Poly1305 tag (16).
SEAL_OVERHEAD = 48


class SealingError(ValidationError):
    """A sealed payload is not valid base64 or does not open with the server's key."""


def _nacl() -> Any:
    try:
        from nacl import public
    except ImportError:  # pragma: no cover - depends on the install
        raise SealingError("sealed reports need PyNaCl: pip install 'privbandits[serve]'") from None
    return public


def keygen() -> tuple[str, str]:
    """A fresh key pair ``(private_key, public_key)``, both base64."""
    public = _nacl()
    sk = public.PrivateKey.generate()
    return (base64.b64encode(bytes(sk)).decode(), base64.b64encode(bytes(sk.public_key)).decode())


def seal(report: Any, public_key: str, size: int | None = None) -> dict[str, str]:
    """``{"sealed": base64 ciphertext}`` of the JSON of ``report`` for ``public_key`` (base64).

    ``size``: pad the JSON text with spaces to exactly ``size`` bytes (a longer text is an error),
    so that every report of one format seals to the same number of bytes.
    """
    public = _nacl()
    box = public.SealedBox(public.PublicKey(base64.b64decode(public_key)))
    data = json.dumps(report, separators=(",", ":"), allow_nan=False).encode()
    if size is not None:
        if len(data) > size:
            raise SealingError(
                f"the report's JSON text has {len(data)} bytes, more than the padded size {size}"
            )
        data += b" " * (size - len(data))
    return {"sealed": base64.b64encode(box.encrypt(data)).decode()}


def check_envelope(sealed: Any, size: int | None = None) -> bytes:
    """The ciphertext of a sealed payload, checked without opening it (what the shuffler can see):
    a base64 string of a sealed box, of exactly ``SEAL_OVERHEAD + size`` bytes when ``size`` (the
    padded report size) is given.

    Raises
    ------
    SealingError
        Naming what is wrong with the envelope.
    """
    if not isinstance(sealed, str) or not sealed:
        raise SealingError("sealed: must be a non-empty base64 string (a sealed box)")
    try:
        raw = base64.b64decode(sealed, validate=True)
    except ValueError:
        raise SealingError("sealed: not valid base64") from None
    if len(raw) <= SEAL_OVERHEAD:
        raise SealingError(
            f"sealed: {len(raw)} bytes is too short for a sealed box ({SEAL_OVERHEAD} bytes of "
            "envelope and the report)"
        )
    if size is not None and len(raw) != SEAL_OVERHEAD + size:
        raise SealingError(
            f"sealed: {len(raw)} bytes; a sealed report of this model's format has exactly "
            f"{SEAL_OVERHEAD + size} bytes (its JSON padded to {size} bytes)"
        )
    return raw


def open_sealed(sealed: Any, private_key: str) -> Any:
    """The report inside a sealed payload (the JSON value it encrypts).

    Raises
    ------
    SealingError
        If ``sealed`` is not base64, does not decrypt with ``private_key`` or is not JSON.
    """
    public = _nacl()
    from nacl.exceptions import CryptoError

    if not isinstance(sealed, str):
        raise SealingError("sealed: must be a base64 string")
    try:
        raw = base64.b64decode(sealed, validate=True)
    except ValueError:
        raise SealingError("sealed: not valid base64") from None
    try:
        data = public.SealedBox(public.PrivateKey(base64.b64decode(private_key))).decrypt(raw)
    except CryptoError:
        raise SealingError(
            "sealed: does not open with the server's key (sealed for another key, or corrupted)"
        ) from None
    try:
        return json.loads(data)
    except ValueError:
        raise SealingError("sealed: the sealed content is not JSON") from None
