"""torch.futures: Future, collect_all, wait_all. An ember Future completes when set_result/set_exception is called
(by any thread: wait() blocks until then, as torch's; RPC replies arrive that way) or, for one made from a
started operation (Work.get_future) or by then() on such a one, when that operation or the future it follows
completes; such a future advances when it is polled (done()) or waited on (wait()), which is also when MPI
advances the operation. then() on a future that set_result completes runs its callback right then, as torch."""
import threading

__all__ = ["Future", "collect_all", "wait_all"]

_lock = threading.Lock()  # completion against adding a callback or a waiter, across threads


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
        self._event = None  # a threading.Event while some thread waits for set_result / set_exception

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
                self._block(None)
            else:
                self._resolve()
        if self._error is not None:
            raise self._error
        return self._value

    def _block(self, timeout):
        """Wait up to `timeout` seconds (None: no limit) for another thread's set_result / set_exception;
        whether the future is complete."""
        with _lock:
            if self._done:
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

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
        if self._source is None:  # completed by set_result: the callback runs then, in that thread
            following = Future()

            def fire(f):
                try:
                    following.set_result(callback(f))
                except Exception as e:  # noqa: BLE001 -- torch's wrapping of an error in a callback
                    following.set_exception(RuntimeError("Got the following error when running the callback: "
                                                         f"{type(e).__name__}: {e}"))
            self.add_done_callback(fire)
            return following

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
        with _lock:
            if not self._done:
                self._callbacks.append(callback)
                return
        callback(self)

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
        with _lock:
            self._done = True
            callbacks, self._callbacks = self._callbacks, []
            event = self._event
        if event is not None:
            event.set()
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
