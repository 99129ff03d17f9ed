"""One-line diagnostics on stderr.

The traced program's stderr is also its log, which Teller aligns with the trace, so every
problem of ours costs at most one line per hook and never a traceback.
"""
import sys
import threading

_lock = threading.Lock()
_said = set()


def say_once(key, line):
    """Prints `line` the first time `key` is seen in this process."""
    with _lock:
        if key in _said:
            return
        _said.add(key)
    try:
        stream = sys.stderr if sys.stderr is not None else sys.__stderr__
        if stream is not None:
            stream.write(line + "\n")
            stream.flush()
    except Exception:  # a closed or broken stderr must not reach the program
        pass


def skipped(name, why):
    say_once(("skip", name), "teller: hook %s skipped: %s" % (name, why))


def degraded(name, why):
    say_once(("degraded", name),
             "teller: hook %s degraded: %s; its ranges continue without fields" % (name, why))


def disabled(why):
    say_once(("disabled",), "teller: python hooks disabled: %s" % why)
