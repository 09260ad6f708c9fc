"""The canonical JSON of a spec (docs/schema-format.md): what a schema's fingerprint and a
hello's field hashes are computed from. A leaf module: the schema and the datagram layer both
use it, and it imports nothing of the package but its errors."""

import json
from collections.abc import Mapping

from .errors import SchemaError


def canonical(obj):
    """The spec as a JSON-able tree whose every float is written by `float.hex` (exact, and the
    same on every machine and Python version)."""
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj.hex()
    if isinstance(obj, Mapping):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    raise SchemaError(f"spec value {obj!r} is not JSON-able")


def canonical_json(spec):
    return json.dumps(canonical(spec), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
