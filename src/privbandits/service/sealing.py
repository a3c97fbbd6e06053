"""Reports sealed to the server's public key, so a shuffler in between cannot read them.

A libsodium *sealed box* (X25519 + XSalsa20-Poly1305 with an ephemeral sender key, through
PyNaCl) encrypts a report for the server's public key: the shuffler forwards the ciphertext
without learning the report, and the ciphertext carries nothing about its sender.  The server
publishes its public key in ``GET /v1/model`` (``public_key``, base64).
"""

from __future__ import annotations

import base64
import json
from typing import Any

from privbandits.core.errors import ValidationError

__all__ = ["SealingError", "keygen", "open_sealed", "seal"]


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


def seal(report: Any, public_key: str) -> dict[str, str]:
    """``{"sealed": base64 ciphertext}`` of the JSON of ``report`` for ``public_key`` (base64)."""
    public = _nacl()
    box = public.SealedBox(public.PublicKey(base64.b64decode(public_key)))
    data = json.dumps(report, separators=(",", ":"), allow_nan=False).encode()
    return {"sealed": base64.b64encode(box.encrypt(data)).decode()}


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
        raise SealingError("sealed: does not open with the server's key (sealed for another key, or corrupted)") from None
    try:
        return json.loads(data)
    except ValueError:
        raise SealingError("sealed: the sealed content is not JSON") from None
