"""The two-node program's fixtures, session-scoped: a session is this program (see __init__.py).

Contract: `program` is PROGRAM, which the shared fixtures of ../conftest.py make their run of
(the shared `tools`: nothing built before the cluster but helm); `state` the State its steps hand
on across files. Each step's cluster gets its image, operator and namespace from prepare.prepare().
"""

import pytest

from ..program import Program
from . import PROGRAM
from .state import State


@pytest.fixture(scope="session")
def program() -> Program:
    """This program (PROGRAM in __init__.py): what the shared fixtures make its run of."""
    return PROGRAM


@pytest.fixture(scope="session")
def state() -> State:
    """What the steps hand on across files, empty at the start of the session."""
    return State()
