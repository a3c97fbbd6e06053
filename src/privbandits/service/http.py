"""Strict reading of a JSON request body: the one reader of the server and the shuffler (and
:func:`service_app`, the bare FastAPI application both are built on).

Every request body passes the same checks, in this order, and each failure is a
:class:`~privbandits.service.codec.FieldError` (a 4xx naming the problem) rather than a crash:

================================  ======  =======================================================
check                             status  field
================================  ======  =======================================================
``Content-Type`` is               415     ``Content-Type``
``application/json`` (charset, if
given, ``utf-8``)
size, first from                  413     ``body``
``Content-Length``, then counted
while the body streams in (a
chunked body is cut at the limit,
never buffered beyond it)
UTF-8 (no byte-order mark, no     400     ``body``
invalid byte sequence)
nesting depth, counted on the     400     ``body``
text before parsing (no
``RecursionError``)
JSON syntax, no repeated key      400     ``body`` / the key
a JSON object                     422     ``body``
no lone surrogate (``\\ud800``)    422     the key path, e.g. ``report.z[0]``
or NUL in a key or string value
================================  ======  =======================================================

``NaN`` and ``Infinity`` literals are read as floats so that the field that holds them is named by
the field checks (which refuse non-finite numbers).
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from privbandits.service.codec import FieldError

if TYPE_CHECKING:
    from fastapi import FastAPI

__all__ = ["MAX_DEPTH", "check_text", "printable", "read_json", "service_app", "stream_limited"]

#: Deepest accepted nesting of JSON arrays and objects (a report matrix needs 3).
MAX_DEPTH = 32

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def service_app(title: str, lifespan: Any, **options: Any) -> FastAPI:
    """A FastAPI application with ``lifespan`` and without the interactive documentation and the
    OpenAPI schema (no ``/docs``, ``/redoc`` or ``/openapi.json``): a process of the deployment
    answers on its own routes only.  ``options`` go to :class:`fastapi.FastAPI`."""
    from fastapi import FastAPI

    return FastAPI(
        title=title,
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        **options,
    )


def printable(text: str, limit: int = 100) -> str:
    """``text`` cut to ``limit`` characters with lone surrogates and controls escaped (safe to
    put in an error message, a log line or a database)."""
    cut = text[:limit].encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in cut)


def check_content_type(header: str | None) -> None:
    """Refuse (415) a body that is not declared ``application/json`` in UTF-8."""
    if not header:
        raise FieldError(
            "Content-Type",
            "missing: send 'Content-Type: application/json' with a JSON body",
            status=415,
        )
    media, *params = (p.strip() for p in header.split(";"))
    if media.lower() != "application/json":
        raise FieldError(
            "Content-Type",
            f"{printable(media, 60)!r} is not accepted: the body must be application/json",
            status=415,
        )
    for p in params:
        name, _, value = p.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() not in (
            "utf-8",
            "utf8",
        ):
            raise FieldError(
                "Content-Type",
                f"charset {printable(value.strip(), 40)!r} is not accepted: the body must be UTF-8",
                status=415,
            )


def _too_large(limit: int, size: int | None = None) -> FieldError:
    what = f"request body of {size} bytes" if size is not None else "request body"
    return FieldError("body", f"{what} exceeds the limit of {limit} bytes", status=413)


async def stream_limited(
    chunks: AsyncIterator[bytes], limit: int, content_length: str | None = None
) -> bytes:
    """The body from ``chunks``, refused (413) as soon as more than ``limit`` bytes arrived (or
    ``Content-Length`` announces more): nothing beyond the limit is read or kept."""
    if content_length is not None:
        text = content_length.strip()
        if not text.isdigit():
            raise FieldError(
                "Content-Length", f"must be a number of bytes, got {printable(text, 40)!r}"
            )
        if int(text) > limit:
            raise _too_large(limit, int(text))
    parts: list[bytes] = []
    size = 0
    async for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        parts.append(chunk)
    return b"".join(parts)


def _check_depth(text: str, max_depth: int) -> None:
    depth = 0
    for m in _BRACKETS.finditer(_STRING.sub('""', text)):
        if m.group() in "[{":
            depth += 1
            if depth > max_depth:
                raise FieldError(
                    "body",
                    f"JSON nested deeper than {max_depth} levels (arrays and objects); "
                    "a request needs at most a few",
                    status=400,
                )
        else:
            depth -= 1


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise FieldError(printable(k), "appears twice in one JSON object", status=400)
        out[k] = v
    return out


def _walk(value: Any, path: str) -> None:
    """Refuse (422) a lone surrogate in any key or string of ``value``, naming where."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise FieldError(
                path or "body", "contains a lone surrogate (not a Unicode character)"
            ) from None
        if "\x00" in value:
            raise FieldError(path or "body", "contains a NUL character (\\u0000)")
    elif isinstance(value, dict):
        for k, v in value.items():
            where = f"{path}.{printable(k)}" if path else printable(k)
            try:
                k.encode("utf-8")
            except UnicodeEncodeError:
                raise FieldError(
                    where, "the key contains a lone surrogate (not a Unicode character)"
                ) from None
            if "\x00" in k:
                raise FieldError(where, "the key contains a NUL character (\\u0000)")
            _walk(v, where)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _walk(v, f"{path}[{i}]")


def check_text(raw: bytes, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """A body's bytes as a JSON object after the checks of the module docstring (except the
    content type and size, which :func:`read_json` applies while reading)."""
    if raw.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        raise FieldError("body", "starts with a byte-order mark: send UTF-8 without one", 400)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FieldError(
            "body", f"is not valid UTF-8 (byte {exc.start}): send UTF-8 JSON", status=400
        ) from None
    _check_depth(text, max_depth)
    try:
        body = json.loads(text, object_pairs_hook=_pairs)
    except FieldError:
        raise
    except (ValueError, RecursionError) as exc:
        raise FieldError("body", f"malformed JSON: {printable(str(exc), 200)}", 400) from None
    if not isinstance(body, dict):
        raise FieldError("body", f"the body must be a JSON object, got {type(body).__name__}")
    _walk(body, "")
    return body


async def read_json(request: Any, limit: int, max_depth: int = MAX_DEPTH) -> dict[str, Any]:
    """The JSON object of a Starlette ``request`` after every check of the module docstring.

    Parameters
    ----------
    request : starlette.requests.Request
        The request (its body is streamed, not buffered beyond ``limit``).
    limit : int
        Largest accepted body (bytes).
    max_depth : int
        Deepest accepted nesting of arrays and objects.

    Raises
    ------
    FieldError
        With the HTTP status (400, 413, 415 or 422) and the field or header at fault.
    """
    check_content_type(request.headers.get("content-type"))
    raw = await stream_limited(request.stream(), limit, request.headers.get("content-length"))
    return check_text(raw, max_depth)
