"""A torchrun-style script: reads torch's environment variables, runs one all_reduce, prints what it saw."""
import json
import os
import sys

import ember
import ember.distributed as dist

dist.init_process_group(backend="gloo")
t = ember.ones(1) * (dist.get_rank() + 1)
dist.all_reduce(t)
names = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT",
         "OMP_NUM_THREADS")
seen = {name: os.environ.get(name) for name in names}
print("LAUNCHED " + json.dumps({"rank": dist.get_rank(), "size": dist.get_world_size(), "sum": t.item(),
                                "argv": sys.argv[1:], "env": seen, "elastic": dist.is_torchelastic_launched()}),
      flush=True)
dist.destroy_process_group()
