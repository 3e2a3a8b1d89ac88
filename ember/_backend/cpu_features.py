"""What the CPU can do, read once from /proc/cpuinfo: torch's CPU kernels pick their paths by it.

torch takes oneDNN's bfloat16 kernels only on CPUs that run them natively (AVX-512 BW/VL/DQ, or
AVX-NE-CONVERT), so a few edge behaviours (e.g. zero-length transposed-convolution outputs in
bfloat16) differ between machines; ember follows torch on the machine it runs on.
"""
import functools


@functools.lru_cache(maxsize=None)
def flags():
    """The CPU's feature flags (empty where /proc/cpuinfo cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def onednn_bf16():
    """Whether torch's oneDNN would run bfloat16 kernels on this CPU."""
    f = flags()
    return {"avx512bw", "avx512vl", "avx512dq"} <= f or "avx_ne_convert" in f
