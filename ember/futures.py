"""torch.futures: Future, collect_all, wait_all. An ember Future completes when set_result/set_exception is called
or, for one made from a started operation (Work.get_future) or by then(), when that operation or the future it
follows completes; ember has no background threads, so such a future advances when it is polled (done()) or
waited on (wait()), which is also when MPI advances the operation."""

__all__ = ["Future", "collect_all", "wait_all"]


class Future:
    """The result of an asynchronous operation: wait() blocks until it is there and returns it (or raises its
    error); then(callback) chains callback(self) into a new Future."""

    def __init__(self, *, devices=None):
        self._done = False
        self._value = None
        self._error = None
        self._callbacks = []
        self._poll = None  # () -> bool: whether the source completed (set by get_future / then)
        self._source = None  # () -> value: blocks until the source completes (set by get_future / then)

    @classmethod
    def _of(cls, poll, source):
        """A Future completed by source() (blocking) once poll() says so (internal)."""
        f = cls()
        f._poll = poll
        f._source = source
        return f

    def done(self):
        """Whether the result (or an error) is there; polls the operation behind the future."""
        if not self._done and self._source is not None and self._poll():
            self._resolve()
        return self._done

    def wait(self):
        """Block until the future completes; its value, or its error raised."""
        if not self._done:
            if self._source is None:
                raise RuntimeError("wait() on a Future that nothing completes: call set_result or set_exception")
            self._resolve()
        if self._error is not None:
            raise self._error
        return self._value

    def value(self):
        """The value of a completed future (its error raised)."""
        if not self._done:
            raise RuntimeError("value() called on a Future that has not completed (wait() for it first)")
        if self._error is not None:
            raise self._error
        return self._value

    def then(self, callback):
        """A new Future holding callback(self), run once this one completes (an error in it is the new
        future's error)."""
        def run():
            if not self._done:
                try:
                    self.wait()
                except Exception:  # noqa: BLE001 -- the callback meets the error through value()
                    pass
            try:
                return callback(self)
            except Exception as e:  # torch's wrapping of an error in a callback
                raise RuntimeError(f"Got the following error when running the callback: {type(e).__name__}: "
                                   f"{e}") from e
        return Future._of(self.done, run)

    def add_done_callback(self, callback):
        """callback(self) once this future completes (now, if it has)."""
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def set_result(self, result):
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._value = result
        self._finish()

    def set_exception(self, result):
        if not isinstance(result, BaseException):
            raise TypeError(f"set_exception expects an exception, got {type(result).__name__}")
        if self._done:
            raise RuntimeError("Future can only be marked completed once.")
        self._error = result
        self._finish()

    def _resolve(self):
        source, self._source = self._source, None
        try:
            value = source()
        except Exception as e:  # noqa: BLE001 -- the future's error, raised by wait()
            self.set_exception(e)
        else:
            self.set_result(value)

    def _finish(self):
        self._done = True
        callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)


def collect_all(futures):
    """A Future of the list of these futures, complete when all of them are."""
    futures = list(futures)

    def gather():
        for f in futures:
            try:
                f.wait()
            except Exception:  # noqa: BLE001 -- a failed future is still collected, as in torch
                if not f.done():
                    raise
        return futures
    return Future._of(lambda: all(f.done() for f in futures), gather)


def wait_all(futures):
    """Wait for every future; their values (the first error raised)."""
    return [f.wait() for f in futures]
