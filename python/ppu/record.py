"""Record: a JSON object read by attribute and checked against its shape in the contract
(core/contract_document.h's notation: {"type", "fields" | "values", "items", "optional"}).

  r.name          the field's value: a Record for an object with fields, a dict of Records for a
                  map ("values"), a list for an array, a plain dict for a free-form object; None
                  for an optional field that is absent
                  AttributeError: not a field of the contract (a typo, or a field that is gone)
                  ContractError: a field the contract requires is absent
  r.as_dict()     the JSON object as read
  check(data, shape, where)   the ContractError of the first field that is missing, unknown or of
                  another type, or None
A Record's attribute names are the contract's keys through `to_key` (identity for the run
summary; snake_case to camelCase for a PPUJob's status); with `all_optional` (a status, whose
every field may be unset) an absent field reads None.
"""

import json


class ContractError(ValueError):
    """A document that does not have the shape the contract gives it."""


_TYPES = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "int-or-string": lambda v: isinstance(v, int | str) and not isinstance(v, bool),
}


def _same(name):
    return name


class Record:
    __slots__ = ("_all_optional", "_data", "_shape", "_to_key", "_where")

    def __init__(self, data, shape, where, to_key=_same, all_optional=False):
        if not isinstance(data, dict):
            raise ContractError(f"{where}: an object was expected, not {type(data).__name__}")
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "_shape", shape)
        object.__setattr__(self, "_where", where)
        object.__setattr__(self, "_to_key", to_key)
        object.__setattr__(self, "_all_optional", all_optional)

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        fields = self._shape.get("fields")
        key = self._to_key(name)
        if key not in fields:
            raise AttributeError(f"{self._where} has no field {key!r} in the contract (python/ppu/contract.json)")
        if key not in self._data:
            if self._all_optional or fields[key].get("optional"):
                return None
            raise ContractError(f"{self._where} lacks the field {key!r} (written by another version of ppu-train?)")
        return wrap(self._data[key], fields[key], f"{self._where}.{key}", self._to_key, self._all_optional)

    def __setattr__(self, name, value):
        raise AttributeError(f"{self._where} is read-only")

    def as_dict(self):
        return self._data

    def __eq__(self, other):
        return isinstance(other, Record) and self._data == other._data

    def __hash__(self):  # equal Records (by content, as __eq__ says) hash alike
        return hash(json.dumps(self._data, sort_keys=True))

    def __repr__(self):
        return f"Record({self._where})"


def wrap(value, shape, where, to_key=_same, all_optional=False):
    """`value` as its shape reads it: Records for objects with fields, recursively."""
    if value is None:
        return None
    if shape.get("type") == "object":
        if "fields" in shape:
            return Record(value, shape, where, to_key, all_optional)
        if "values" in shape:
            return {k: wrap(v, shape["values"], f"{where}[{k!r}]", to_key, all_optional) for k, v in value.items()}
        return value
    if shape.get("type") == "array" and "items" in shape:
        return [wrap(v, shape["items"], f"{where}[{i}]", to_key, all_optional) for i, v in enumerate(value)]
    return value


def check(data, shape, where, required=True):
    """The first way `data` differs from `shape`, as a ContractError, or None. `required`: fields
    not marked optional must be present (the run summary writes every one)."""
    type_ = shape.get("type")
    if type_ in _TYPES and not _TYPES[type_](data):
        return ContractError(f"{where} is {type(data).__name__}, the contract says {type_}")
    if type_ == "object" and "fields" in shape:
        fields = shape["fields"]
        for key in data:
            if key not in fields:
                return ContractError(f"{where} has the field {key!r}, which the contract does not list")
        for key, sub in fields.items():
            if key in data:
                err = check(data[key], sub, f"{where}.{key}", required)
                if err:
                    return err
            elif required and not sub.get("optional"):
                return ContractError(f"{where} lacks the field {key!r}")
    elif type_ == "object" and "values" in shape:
        for key, value in data.items():
            err = check(value, shape["values"], f"{where}[{key!r}]", required)
            if err:
                return err
    elif type_ == "array" and "items" in shape:
        for i, value in enumerate(data):
            err = check(value, shape["items"], f"{where}[{i}]", required)
            if err:
                return err
    return None
