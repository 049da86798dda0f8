"""The allowed names of every choice-valued config key, from the contract
(runtime/core/config_choices.h), in the order the docs list them.

  names(key)        e.g. names("method") -> ["ppu", "diloco", "streaming-diloco", "ddp"]
  Method, Recovery  the two most used as constants: Method.STREAMING_DILOCO == "streaming-diloco"
"""

import types

from . import CONTRACT

_CHOICES = CONTRACT["choices"]


def names(key):
    if key not in _CHOICES:
        raise KeyError(f"{key!r} is not a choice-valued config key (python/ppu/contract.json: choices)")
    return list(_CHOICES[key])


def _constants(key):
    return types.SimpleNamespace(**{n.upper().replace("-", "_").replace("+", "_"): n for n in _CHOICES[key]})


Method = _constants("method")
Recovery = _constants("network.recovery")
