"""Module with either of torch's calling conventions, chosen by TELLER_TEST_TORCH_BINDING:
"direct" binds __call__ = _call_impl at class creation (torch 1.x and 2.0); anything
else binds __call__ = _wrapped_call_impl, which looks self._call_impl up at each call
(torch >= 2.1); "own" gives __call__ a body of its own that never calls _call_impl, as a
future version might, so that the hook's wrapper is never reached."""
import os


class Module(object):
    def _wrapped_call_impl(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    if os.environ.get("TELLER_TEST_TORCH_BINDING") == "direct":
        __call__ = _call_impl
    elif os.environ.get("TELLER_TEST_TORCH_BINDING") == "own":
        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)
    else:
        __call__ = _wrapped_call_impl
