"""Scripts the distributed tests launch under mpiexec, and the once() helper that shares a launch's result."""
