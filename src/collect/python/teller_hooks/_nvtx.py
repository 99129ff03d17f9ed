"""ctypes binding of libteller_nvtx_shim.so (see nvtx_shim.c).

The shim carries its own NVTX v3 client, so ranges reach the tool named by
NVTX_INJECTION64_PATH without torch, CUDA or the `nvtx` package.
"""
import ctypes

ABI_VERSION = 1


class Shim(object):
    """The loaded shim plus the "teller" domain every hook records into."""

    def __init__(self, path, domain_name="teller"):
        lib = ctypes.CDLL(path)
        version = lib.teller_shim_abi_version
        version.restype = ctypes.c_int
        version.argtypes = []
        found = version()
        if found != ABI_VERSION:
            raise RuntimeError("%s has ABI %d, expected %d" % (path, found, ABI_VERSION))
        vp, cp, u64 = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_uint64

        def bind(name, restype, argtypes):
            f = getattr(lib, name)
            f.restype = restype
            f.argtypes = argtypes
            return f

        self._lib = lib
        self._domain_create = bind("teller_shim_domain_create", vp, [cp])
        self._push = bind("teller_shim_push", ctypes.c_int, [vp, cp])
        self._pop = bind("teller_shim_pop", ctypes.c_int, [vp])
        self._mark = bind("teller_shim_mark", None, [vp, cp])
        self._start = bind("teller_shim_range_start", u64, [vp, cp])
        self._end = bind("teller_shim_range_end", None, [vp, u64])
        self._register = bind("teller_shim_register_string", vp, [vp, cp])
        self.domain = self._domain_create(domain_name.encode("ascii"))

    # Messages are ASCII by construction (see _message.py); bytes pass unchanged.
    def push(self, message):
        return self._push(self.domain, message)

    def pop(self):
        return self._pop(self.domain)

    def mark(self, message):
        self._mark(self.domain, message)

    def start(self, message):
        return self._start(self.domain, message)

    def end(self, range_id):
        self._end(self.domain, range_id)
