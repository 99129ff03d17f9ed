"""Traced program for the Python hook tests: drives the fake vLLM v1 engine through
known steps. Run under `teller run --python-hooks vllm`; python_hooks_test.py checks
the ranges. Exits with status 3 so the test sees the status pass through."""
import os
import sys
import threading

import vllm.v1.engine.core as core
from vllm.v1.worker.gpu_model_runner import ModelRunnerFailure

# Known steps: (request id, scheduled tokens, first time scheduled). The test's
# EXPECTED_STEPS mirrors this list.
BIG = ["req-%04d-abcdefghijklmnop" % i for i in range(300)]
PLAN = [
    [("cmpl-1", 5, True), ("cmpl-2", 7, True)],       # prefill
    [("cmpl-1", 1, False), ("cmpl-2", 1, False)],     # decode
    [("cmpl-1", 1, False), ("cmpl 3,x=%\u00e9", 4, True)],  # mixed; id needs escaping
    [(r, 1, False) for r in BIG],                     # decode; ids exceed one message
]


def main():
    engine = core.EngineCore(PLAN)
    while engine.step()[1]:
        pass

    # A step on another thread: its ranges must nest on that thread.
    t = threading.Thread(target=lambda: core.EngineCore([[("thr-1", 1, False)]]).step())
    t.start()
    t.join()

    # The wrapped function's own exception must reach us unchanged.
    failing = core.EngineCore([[("boom-1", 3, True)]])
    try:
        failing.step()
    except ModelRunnerFailure as e:
        assert type(e) is ModelRunnerFailure, type(e)
        print("caught %s: %s" % (type(e).__name__, e))
    else:
        print("expected ModelRunnerFailure was not raised")
        return 1

    # Wrapping keeps the function's identity for introspection.
    print("step name: %s" % core.EngineCore.step.__name__)
    print("hooked: %s" % (getattr(core.EngineCore.step, "__teller_hook__", None) or "no"))
    print("chained: %s" % os.environ.get("TELLER_TEST_CHAINED_SITE", "missing"))
    print("vllm imported from: %s" % os.path.dirname(core.__file__))

    if os.environ.get("TELLER_TEST_USER_HOOKS"):
        import user_mod
        user_mod.main()
    print("program done")
    return 3


if __name__ == "__main__":
    sys.exit(main())
