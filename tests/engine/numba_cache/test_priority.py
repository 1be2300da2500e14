"""The warm-up process yields the cores to the program it serves: an idle task on Linux (a woken thread of the program
takes the core at once), its own nice value, and its scheduling group's, since it leads a session of its own and the
kernel's autogroups share the CPU evenly between sessions whatever their processes' nice values."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.core.cpu.numba_cache import warmup

ROOT = Path(__file__).parents[3]
LOWERED = """
import json, os
from engine.core.cpu.numba_cache import warmup
warmup._lower_priority()
group = open("/proc/self/autogroup").read().split() if os.path.exists("/proc/self/autogroup") else None
idle = os.sched_getscheduler(0) == os.SCHED_IDLE if hasattr(os, "SCHED_IDLE") else None
print(json.dumps({"nice": os.nice(0), "group": group, "idle": idle}))
"""


@pytest.mark.skipif(not hasattr(os, "nice"), reason="no nice values on this system")
def test_a_warm_up_in_a_session_of_its_own_lowers_its_group_too():
    done = subprocess.run([sys.executable, "-c", LOWERED], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          start_new_session=True, check=True)  # as warmup.start starts it
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["nice"] == warmup.NICE
    assert answer["idle"] in (True, None)  # an idle task where the system has the policy (Linux)
    if answer["group"] is not None:  # "/autogroup-N nice K" where the kernel groups sessions
        assert answer["group"][-2:] == ["nice", str(warmup.NICE)]
