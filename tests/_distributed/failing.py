"""A job in which one rank fails (mode: raise, sigkill, hang, exit) while the others wait in all_reduce.

A marker argument lets the test find stray processes of this job afterwards."""
import datetime
import os
import signal
import sys
import time

import ember
import ember.distributed as dist

mode = sys.argv[1]
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=float(sys.argv[2])))
t = ember.ones(3)
dist.all_reduce(t)  # everyone is up
if dist.get_rank() == dist.get_world_size() - 1:
    time.sleep(0.5)  # the others are waiting in the next all_reduce
    if mode == "raise":
        raise ValueError("rank failed on purpose")
    if mode == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    if mode == "hang":
        time.sleep(600)
    if mode == "exit":
        sys.exit(3)
dist.all_reduce(t)
print("finished", dist.get_rank(), t.tolist())
