"""Type stubs for quantcodec._schemabase: the compiled base of Schema, plan_of, record_methods."""

from typing_extensions import disjoint_base

from ._plan import Plan

__all__ = ["SchemaBase", "plan_of", "record_methods"]

@disjoint_base
class SchemaBase:
    """The compiled base of quantcodec.Schema: the schema's plan, in a C field."""

    @property
    def _plan(self) -> Plan: ...
    def __init__(self, plan: Plan) -> None: ...

def plan_of(obj: object) -> Plan | None:
    """The compiled plan of a schema (a SchemaBase), or None for anything else."""

def record_methods(cls: type[SchemaBase]) -> None:
    """Give `cls` its one-record methods (encode, decode, quantize, dequantize, roundtrip,
    encode_codes, decode_codes, valid) as C method descriptors of its own."""
