"""The format of one privatized report, shared by the server, the shuffler and the device.

A served local or shuffle algorithm publishes its report format in ``GET /v1/model``
(``report``: the mechanism, each field's shape and number type, and the output range where the
mechanism declares one).  :class:`ReportFormat` is the one reader of that format:

* the server parses every report it receives with :meth:`ReportFormat.parse` (unknown or missing
  fields, shapes, number types, finiteness, arm indices, output range);
* the shuffler rebuilds the format from the model it relays (:meth:`ReportFormat.from_description`)
  and checks a plain report the same way before it queues it; a report *sealed* to the server
  cannot be read by the shuffler, so it checks the envelope only: base64 and the exact ciphertext
  size of a padded report of this format (:meth:`ReportFormat.sealed_size`,
  :func:`privbandits.service.sealing.seal`);
* the device pads its sealed reports to that size, so that the size of a sealed report says
  nothing about the values inside.

A batched-elimination schedule (Hanna et al. 2022, Algorithm 3: the public ``counts`` ``n_ia`` of
the running batch and the ``committed`` action) is read by :func:`schedule_of`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privbandits.service.codec import FieldError, parse_array
from privbandits.service.ranges import RangeRule

__all__ = ["FieldSchema", "ReportFormat", "flat_ints", "schedule_of"]

#: The longest JSON text of one number: ``repr`` of a float64 (``-2.2250738585072014e-308``) or
#: of an int64 (``-9223372036854775808``) is at most 24 characters.
_NUMBER_CHARS = 24


@dataclass(frozen=True)
class FieldSchema:
    """One report field: its shape (without the replication axis) and number kind (``f``/``i``)."""

    name: str
    shape: tuple[int, ...]
    kind: str = "f"

    def describe(self) -> dict[str, Any]:
        return {"shape": list(self.shape), "dtype": "float64" if self.kind == "f" else "int64"}

    def json_schema(self) -> dict[str, Any]:
        """JSON Schema of the field: nested arrays of exactly ``shape`` around numbers (integers)."""
        out: dict[str, Any] = {"type": "number" if self.kind == "f" else "integer"}
        for n in reversed(self.shape):
            out = {"type": "array", "items": out, "minItems": n, "maxItems": n}
        return out

    def widest(self) -> Any:
        """A value of this field whose JSON text is as long as any value's can be (for padding)."""
        out: Any = 0
        for n in reversed(self.shape):
            out = [out] * n
        return out


@dataclass(frozen=True)
class ReportFormat:
    """What a genuine report of one mechanism looks like (see the module docstring).

    Parameters
    ----------
    mechanism : str
        The randomizer's name.
    fields : tuple of FieldSchema
        The report's fields, in payload order.
    K : int
        Number of arms (an integer field named ``action`` holds an arm index).
    rules : mapping
        Output-range rules by field name (:mod:`privbandits.service.ranges`).
    """

    mechanism: str
    fields: tuple[FieldSchema, ...]
    K: int
    rules: Mapping[str, RangeRule] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    @classmethod
    def from_description(cls, report: Any, K: Any) -> ReportFormat | None:
        """The format described by ``GET /v1/model``'s ``report`` (None if there is none or it is
        not a report format: the shuffler of a server that publishes none checks structure only)."""
        if (
            not isinstance(report, dict)
            or not isinstance(report.get("fields"), dict)
            or not isinstance(K, int)
        ):
            return None
        fields = []
        for name, f in report["fields"].items():
            if not isinstance(f, dict) or not isinstance(f.get("shape"), list):
                return None
            fields.append(
                FieldSchema(
                    str(name),
                    tuple(int(s) for s in f["shape"]),
                    "i" if f.get("dtype") == "int64" else "f",
                )
            )
        rules = {}
        for name, r in (report.get("output_range") or {}).items():
            if (
                isinstance(r, dict)
                and r.get("kind") in ("l2", "abs")
                and isinstance(r.get("bound"), (int, float))
            ):
                rules[str(name)] = RangeRule(
                    str(r["kind"]), float(r["bound"]), bool(r.get("symmetric", False))
                )
        return cls(str(report.get("mechanism", "")), tuple(fields), K, rules)

    def describe(self) -> dict[str, Any]:
        """The ``report`` entry of ``GET /v1/model``."""
        return {
            "mechanism": self.mechanism,
            "fields": {f.name: f.describe() for f in self.fields},
            "json_schema": self.json_schema(),
            "output_range": (
                {k: r.describe() for k, r in self.rules.items()} if self.rules else None
            ),
        }

    def json_schema(self) -> dict[str, Any]:
        """JSON Schema (draft 2020-12) of one report: the fields' shapes and number types; the
        service also checks finiteness and the output range, which JSON Schema cannot express."""
        fields = {f.name: f.json_schema() for f in self.fields}
        obj = {
            "type": "object",
            "properties": fields,
            "required": list(fields),
            "additionalProperties": False,
        }
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **obj}

    def sealed_size(self) -> int:
        """Bytes of the padded plaintext of a sealed report: the longest compact JSON text any
        report of this format can have (every number written with the most characters)."""
        text = json.dumps({f.name: f.widest() for f in self.fields}, separators=(",", ":"))
        n_numbers = sum(int(np.prod(f.shape, dtype=np.int64)) for f in self.fields)
        return len(text) + n_numbers * (_NUMBER_CHARS - 1)

    def parse(self, report: Any, where: str = "report") -> dict[str, np.ndarray]:
        """A report as arrays (no replication axis), validated.

        Raises
        ------
        FieldError
            Naming the field: unknown or missing keys, wrong shape or number type, non-finite
            values, an arm index out of range, or values outside the mechanism's output range.
        """
        names = self.names
        if not isinstance(report, dict):
            raise FieldError(where, f"must be an object with the fields {names}")
        extra = sorted(str(k) for k in set(report) - set(names))
        if extra:
            raise FieldError(
                f"{where}.{extra[0]}",
                f"unknown field; a {self.mechanism!r} report has exactly the fields {names}",
            )
        out = {}
        for f in self.fields:
            if f.name not in report:
                raise FieldError(
                    f"{where}.{f.name}",
                    f"missing; a {self.mechanism!r} report has the fields {names}",
                )
            arr = parse_array(f"{where}.{f.name}", report[f.name], f.shape, f.kind)
            if (
                f.kind == "i"
                and f.name == "action"
                and arr.size
                and (arr.min() < -1 or arr.max() >= self.K)
            ):
                bad = int(arr.min()) if arr.min() < -1 else int(arr.max())
                raise FieldError(
                    f"{where}.{f.name}",
                    f"must be an arm index in [0, {self.K - 1}] (or -1: no report), got {bad}",
                )
            rule = self.rules.get(f.name)
            if rule is not None:
                rule.check(f"{where}.{f.name}", arr)
            out[f.name] = arr
        return out

    def neutral(self, action: int) -> dict[str, np.ndarray]:
        """A zero report for ``action``: what stands in for a quarantined report of a batch whose
        per-action sizes the protocol fixes (see :meth:`privbandits.service.server.model.ServedModel.complete_batch`)."""
        out = {}
        for f in self.fields:
            if f.kind == "i" and f.name == "action":
                out[f.name] = np.full(f.shape, action, dtype=np.int64)
            else:
                out[f.name] = np.zeros(f.shape, dtype=np.int64 if f.kind == "i" else np.float64)
        return out


def flat_ints(value: Any) -> list[int]:
    """Integers of a nested list, an array, or an encoded array ``{"dtype", "shape", "data"}``."""
    if isinstance(value, dict) and "data" in value:
        value = value["data"]
    return [int(x) for x in np.asarray(value).reshape(-1)]


def schedule_of(public: Mapping[str, Any]) -> tuple[list[int], int] | None:
    """``(counts, committed)`` of a batched-elimination schedule in a public state, else ``None``.

    ``counts[a] = n_ia`` of the running batch and ``committed`` the committed action (``-1`` while
    exploring), Hanna et al. (2022), Algorithm 3.  ``public`` holds arrays (the server's own
    state, one replication) or their JSON encoding (the model the shuffler relays).
    """
    if not isinstance(public, Mapping) or "counts" not in public:
        return None
    committed = flat_ints(public["committed"])[0] if "committed" in public else -1
    return flat_ints(public["counts"]), committed
