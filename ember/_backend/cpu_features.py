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


def set_flush_denormal(mode):
    """Set (or clear) MXCSR's denormals-are-zero and flush-to-zero bits of the calling thread through libm's
    fegetenv/fesetenv (x86-64 glibc, whose fenv_t ends with MXCSR): torch's set_flush_denormal. False where
    the CPU (no SSE3) or the C library cannot."""
    import ctypes
    import ctypes.util
    import platform
    if platform.machine() not in ("x86_64", "AMD64") or "pni" not in flags():  # pni: SSE3
        return False
    name = ctypes.util.find_library("m")
    if name is None:
        return False
    try:
        libm = ctypes.CDLL(name)
    except OSError:
        return False
    env = (ctypes.c_uint32 * 8)()  # glibc x86-64 fenv_t: 28 bytes of x87 state, then MXCSR
    if libm.fegetenv(env) != 0:
        return False
    daz_ftz = 0x0040 | 0x8000
    env[7] = env[7] | daz_ftz if mode else env[7] & ~daz_ftz
    return libm.fesetenv(env) == 0
