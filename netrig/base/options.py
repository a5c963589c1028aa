"""The base of every model a file's keys are read into: unknown keys refused, values frozen,
and yes/no never taken for a number.

YAML reads `yes`, `no`, `on`, `off`, `true` and `false` as booleans, and pydantic takes a
boolean for an int or a float: `duration: yes` was a one-second run. A field that takes
numbers but not booleans refuses them here, at the key's own line.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator


class Options(BaseModel):
    """Unknown keys are errors (a typo is not a silent default); a number is no yes/no."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_truth_for_numbers(cls, value: Any, info: ValidationInfo) -> Any:
        kind = value.__class__
        if kind is bool or kind is list:
            field = cls.model_fields.get(info.field_name or "")
            if field is None:
                return value
            if kind is bool and takes_number_not_truth(field.annotation):
                raise ValueError(_NOT_A_NUMBER.format(str(value).lower()))
            if kind is list and takes_number_not_truth(_item_type(field.annotation)):
                truth = next((v for v in value if v.__class__ is bool), None)
                if truth is not None:  # [0, yes]: a list of numbers
                    raise ValueError(_NOT_A_NUMBER.format(str(truth).lower()))
        return value


_NOT_A_NUMBER = "{} is not a number (YAML reads yes, no, on and off as true and false)"


def _item_type(annotation: Any) -> Any:
    """What a list field holds (list[int] → int); None for anything else."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _item_type(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        items = [_item_type(arg) for arg in get_args(annotation)]
        found = [item for item in items if item is not None]
        return found[0] if len(found) == 1 else None
    if origin is list:
        (item,) = get_args(annotation) or (None,)
        return item
    return None


def takes_number_not_truth(annotation: Any) -> bool:
    """Does a field of this type take an int or a float, and no bool? (Asked only when a
    boolean or a list came; not cached: an annotation need not be hashable.)"""
    if annotation is bool or annotation is Any:
        return False
    origin = get_origin(annotation)
    if origin is Annotated:
        return takes_number_not_truth(get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        args = get_args(annotation)
        if any(arg is bool or arg is Any for arg in args):
            return False
        return any(takes_number_not_truth(arg) for arg in args)
    return annotation is int or annotation is float
