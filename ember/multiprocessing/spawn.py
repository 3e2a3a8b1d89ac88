"""ember.multiprocessing.spawn / start_processes: run fn(i, *args) in nprocs processes and join them.

https://pytorch.org/docs/stable/multiprocessing.html#spawning-subprocesses. A child that raises
sends its traceback text back through a one-way pipe; the parent raises ProcessRaisedException
with it, or ProcessExitedException for a child that died of a signal or exited non-zero, after
terminating the other children.
"""
import multiprocessing
import multiprocessing.connection
import signal
import sys
import time
import traceback
import warnings

__all__ = ["spawn", "start_processes", "ProcessContext", "ProcessException", "ProcessRaisedException",
           "ProcessExitedException"]


class ProcessException(Exception):
    """A child process of spawn() failed."""

    def __init__(self, msg, error_index, error_pid):
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.error_pid = error_pid

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid)


class ProcessRaisedException(ProcessException):
    """The child raised an exception; the message holds its traceback."""


class ProcessExitedException(ProcessException):
    """The child was killed by a signal or exited with a non-zero code."""

    def __init__(self, msg, error_index, error_pid, exit_code, signal_name=None):
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self):
        return type(self), (self.msg, self.error_index, self.error_pid, self.exit_code, self.signal_name)


def _wrap(fn, i, args, error_conn):
    """The child's entry point: fn(i, *args); an exception's traceback goes to the parent."""
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent got the same Ctrl-C and is shutting down
    except Exception:
        error_conn.send(traceback.format_exc())
        error_conn.close()
        sys.exit(1)


class ProcessContext:
    """The started processes; join() waits for them and raises the first failure."""

    def __init__(self, processes, error_conns):
        self.processes = processes
        self.error_conns = error_conns
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self):
        return [int(p.pid) for p in self.processes]

    def join(self, timeout=None, grace_period=None):
        """Wait up to timeout seconds; True once every process has exited cleanly, False while some
        still run. A failed process makes the others stop and raises its error."""
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0 and error_index is None:
                error_index = index
        if error_index is None:
            return not self.sentinels
        self._stop_others(grace_period)
        raise self._error(error_index)

    def _stop_others(self, grace_period):
        if grace_period is not None:
            self._join_all(grace_period)
        for p in self.processes:
            if p.is_alive():
                p.terminate()
        self._join_all(30 if grace_period is None else grace_period)
        for p in self.processes:
            if p.is_alive():
                p.kill()
            p.join()

    def _join_all(self, timeout):
        deadline = time.monotonic() + timeout
        for p in self.processes:
            p.join(max(0.0, deadline - time.monotonic()))

    def _error(self, index):
        process = self.processes[index]
        trace = _read_trace(self.error_conns[index])
        if trace is not None:
            msg = f"\n\n-- Process {index} terminated with the following error:\n{trace}"
            return ProcessRaisedException(msg, index, process.pid)
        code = process.exitcode
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"<Unknown signal {-code}>"
            return ProcessExitedException(f"process {index} terminated with signal {name}", index, process.pid,
                                          code, name)
        return ProcessExitedException(f"process {index} terminated with exit code {code}", index, process.pid, code)


def _read_trace(conn):
    """The traceback a failed child sent, or None (a child killed by a signal sent nothing)."""
    try:
        return conn.recv() if conn.poll() else None
    except (EOFError, OSError):
        return None


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Start nprocs processes of fn(i, *args) with the given start method; join them unless join=False
    (then the ProcessContext is returned)."""
    ctx = multiprocessing.get_context(start_method)
    processes = []
    error_conns = []
    for i in range(nprocs):
        receiver, sender = ctx.Pipe(duplex=False)
        process = ctx.Process(target=_wrap, args=(fn, i, args, sender), daemon=daemon)
        process.start()
        sender.close()  # the child holds the only writing end
        processes.append(process)
        error_conns.append(receiver)
    context = ProcessContext(processes, error_conns)
    if not join:
        return context
    while not context.join():
        pass


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """torch.multiprocessing.spawn: start_processes with the 'spawn' start method."""
    if start_method != "spawn":
        warnings.warn(f"This method only supports start_method=spawn (got: {start_method}).\nTo use a different "
                      "start_method use:\n\t\t ember.multiprocessing.start_processes(...)", FutureWarning,
                      stacklevel=2)
    return start_processes(fn, args, nprocs, join, daemon, start_method="spawn")
