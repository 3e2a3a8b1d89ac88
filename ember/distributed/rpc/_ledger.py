"""How long an RRef's value lives: reference counting across workers (Note [RRef lifetimes]).

Note [RRef lifetimes]: an owner keeps a value while some worker holds an RRef to it, as torch does, and
drops it when the last one is gone (a pipeline that makes RRefs every step would otherwise keep every
step's values). The count is per worker: a worker "holds" an id while it has RRef objects for it or has
sent one (a fork) that its receiver has not reported yet; the owner counts the workers that hold it
(itself included). Every change goes through one thread per worker (the ledger), in the order the events
happened, and the messages between ledgers travel on the RPC connections, which keep their order:

- remote() on W registers W's hold with the owner, and one for the making of the value until it is made
  (a "hold" note sent before the call that makes it); RRef(value) on the owner is its own hold.
- Pickling an RRef inside RPC (the agent's pickler) adds a pending fork to the sender's hold; the
  receiver's new object tells the owner ("arrived"), which counts the receiver if it did not hold the id
  yet and only then releases the sender's pending fork ("confirm"). So between the sender letting go and
  the receiver holding, the owner's count never reaches zero.
- An RRef object collected (its __del__) ends one part of its worker's hold; a worker whose hold ends
  tells the owner ("release"); the owner drops the value when its count reaches zero.

A fork that is never unpickled (its message lost with a dead worker) keeps the value until shutdown.
"""
import collections
import threading


class Ledger:
    """This worker's holds and, for the ids it owns, the count of holding workers; events are applied by one
    thread in arrival order. send(rank, note) delivers a note to another worker's ledger; drop(id) is
    called on the owner when nobody holds id any more."""

    def __init__(self, rank, send, drop):
        self.rank = rank
        self.send = send
        self.drop = drop
        self.held = {}  # id -> RRef objects here + forks sent and not yet confirmed
        self.holders = {}  # id owned here -> workers holding it (this one included)
        self.pending_forks = 0  # forks sent from here not yet confirmed (debug info)
        self.events = collections.deque()
        self.ready = threading.Condition()
        self.idle = True
        self.stopped = False
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"rpc-rref-ledger-{rank}")
        self.thread.start()

    # ---- events (any thread; __del__ included: appending to a deque takes no lock of ours) ------------
    def post(self, *event):
        self.events.append(event)
        with self.ready:
            self.ready.notify()

    def flush(self, timeout=None):
        """Wait until every event posted so far has been applied (for tests and debug info)."""
        marker = threading.Event()
        self.post("flush", marker)
        return marker.wait(timeout)

    def stop(self):
        self.stopped = True
        with self.ready:
            self.ready.notify()

    def _run(self):
        while True:
            with self.ready:
                self.ready.wait_for(lambda: self.events or self.stopped)
            if self.stopped:
                return
            while self.events:
                event = self.events.popleft()
                try:
                    self._apply(*event)
                except Exception:  # noqa: BLE001 -- a peer gone at shutdown: nothing left to count
                    pass

    # ---- the rules (the ledger thread only) --------------------------------------------------------
    def _apply(self, kind, *args):
        if kind == "new":  # an RRef object here: ("new", id, owner, sender of its fork or None)
            rref_id, owner, sender = args
            newly = self._take(rref_id)
            if owner == self.rank:
                if newly:
                    self._count(rref_id, +1)
                if sender is not None:
                    self._release_fork(rref_id, sender)
            elif sender is not None:
                self.send(owner, ("arrived", rref_id, self.rank, sender, newly))
        elif kind == "forked":  # ("forked", id): one sent inside RPC
            self._take(args[0])
            self.pending_forks += 1
        elif kind in ("gone", "confirm"):  # an object collected / a fork of ours now counted by the owner
            rref_id, owner = args
            if kind == "confirm":
                self.pending_forks -= 1
            self._let_go(rref_id, owner)
        elif kind == "hold":  # on the owner: ("hold", id, parts): remote()'s caller and the making of the value
            self._count(args[0], args[1])
        elif kind == "arrived":  # on the owner: ("arrived", id, receiver, sender, receiver newly holds)
            rref_id, _, sender, newly = args
            if newly:
                self._count(rref_id, +1)
            self._release_fork(rref_id, sender)
        elif kind == "release":  # on the owner: ("release", id, worker)
            self._count(args[0], -1)
        elif kind == "flush":
            args[0].set()

    def _take(self, rref_id):
        """One more part of this worker's hold of rref_id; whether it starts the hold."""
        n = self.held.get(rref_id, 0)
        self.held[rref_id] = n + 1
        return n == 0

    def _let_go(self, rref_id, owner):
        n = self.held[rref_id] - 1
        if n:
            self.held[rref_id] = n
            return
        del self.held[rref_id]
        if owner == self.rank:
            self._count(rref_id, -1)
        else:
            self.send(owner, ("release", rref_id, self.rank))

    def _release_fork(self, rref_id, sender):
        """On the owner, once the receiver of sender's fork is counted: the sender's pending fork ends."""
        if sender == self.rank:
            self._apply("confirm", rref_id, self.rank)
        else:
            self.send(sender, ("confirm", rref_id, self.rank))

    def _count(self, rref_id, change):
        n = self.holders.get(rref_id, 0) + change
        if n > 0:
            self.holders[rref_id] = n
            return
        self.holders.pop(rref_id, None)
        self.drop(rref_id)

    def debug_info(self):
        """torch's _rref_context_get_debug_info() counts, as strings: values owned here that another worker
        holds or that are being made, those holds, and this worker's forks not yet confirmed."""
        self.flush(5)
        others = {i: n - (1 if i in self.held else 0) for i, n in self.holders.items()}
        return {"num_owner_rrefs": str(sum(1 for n in others.values() if n > 0)),
                "num_forks": str(sum(others.values())), "num_pending_users": str(self.pending_forks)}
