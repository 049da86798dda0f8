"""A PPUJob's status read by attribute, against the status shape in the contract (the operator's
status field lists, reconcile/ppujob_status.h): st = of(job["status"]); st.outer_round reads
`outerRound`, st.last_stop.rounds_lost reads `lastStop.roundsLost`; an unset field reads None; a
name the status does not have raises AttributeError.
"""

import re

from . import CONTRACT
from .record import Record

SHAPE = CONTRACT["status"]


def to_key(name):
    """snake_case to the API's camelCase: outer_round -> outerRound."""
    return re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), name)


def of(status, where="status"):
    return Record(status or {}, SHAPE, where, to_key=to_key, all_optional=True)
