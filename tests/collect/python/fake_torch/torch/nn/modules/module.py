"""Module with torch's calling convention: __call__ -> _wrapped_call_impl -> self._call_impl."""


class Module(object):
    def _wrapped_call_impl(self, *args, **kwargs):
        return self._call_impl(*args, **kwargs)

    def _call_impl(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    __call__ = _wrapped_call_impl
