"""Work done in multiprocessing children, hooked through mp_specs.json. A module of its
own so that spawn and forkserver children import it (and get the hook) by name."""
import os


def work(tag, i):
    return (tag, i)


def child(tag, ranges, end):
    for i in range(ranges):
        work(tag, i)
    if end == "_exit":
        os._exit(0)  # no atexit handlers, no interpreter shutdown
