"""User code hooked through TELLER_HOOK_SPECS (user_specs.json)."""


class Unprintable(object):
    """Its str() raises: reading it for a range field is an error in *our* code, which
    must be swallowed (one 'degraded' line) while the call itself goes on."""

    def __str__(self):
        raise RuntimeError("no string for you")


class Item(object):
    def __init__(self, ident):
        self.ident = ident


class Worker(object):
    def run(self, items):
        return len(items)


def work(job, payload=None):
    return "worked " + (job if isinstance(job, str) else "?")


async def fetch(job):
    return "fetched %s" % job


def main():
    import asyncio
    print(work("job-1"))
    print(work(Unprintable()))
    print(work("job-2"))
    print("ran %d" % Worker().run([Item("u-1"), Item("u 2")]))
    print(asyncio.run(fetch("job-3")))
