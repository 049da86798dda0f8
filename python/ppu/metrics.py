"""Metric names by constant, from the contract: RANK (runtime/core/job_contract.h's
PPU_RANK_METRICS) and OPERATOR (operator/src/metrics/metric_names.h), each keyed by its C++
constant in snake_case: RANK.flops_executed == "ppu_flops_executed_total",
OPERATOR.job_loss == "ppu_job_loss". A name the C++ no longer has is an AttributeError."""

import types

from . import CONTRACT

RANK = types.SimpleNamespace(**CONTRACT["metrics"]["rank"])
OPERATOR = types.SimpleNamespace(**CONTRACT["metrics"]["operator"])
