"""Put on PYTHONPATH by tests/scripts/_launch_ember.py, so that every Python process a script starts
(torch.multiprocessing's spawn children, DataLoader workers started with spawn, ...) also resolves
`torch` to ember before it unpickles anything or re-imports the script."""
import os
import sys

if os.environ.get("EMBER_AS_TORCH") == "1":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import _launch_ember

    _launch_ember.install()
