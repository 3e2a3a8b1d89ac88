"""LLVM IR for the compiled register tiles of the direct convolutions (conv_direct_jit.py, conv_lanes_jit.py):
vectors of 8 float32 (one AVX2 register), their loads, stores, broadcasts, fused multiply-adds and accumulators,
for the codegen of numba intrinsics. numba does not keep such tiles in vector registers when they are written as
scalar loops (Note [Direct convolution]); the tiles written with these helpers are."""
from llvmlite import ir
from numba.core import cgutils

LANES = 8  # floats per vector
F32 = ir.FloatType()
VEC = ir.VectorType(F32, LANES)
I64 = ir.IntType(64)
_I32 = ir.IntType(32)


class Vectors:
    """An IRBuilder's vector vocabulary: addresses are 64-bit integers of float32 arrays (or int64 arrays), offsets
    are in elements."""

    def __init__(self, builder):
        self.b = builder
        self._fma = cgutils.get_or_insert_function(builder.module, ir.FunctionType(VEC, [VEC] * 3), "llvm.fma.v8f32")

    @staticmethod
    def const(v):
        return ir.Constant(I64, v)

    def floats(self, address):
        return self.b.inttoptr(address, F32.as_pointer())

    def ints(self, address):
        return self.b.inttoptr(address, I64.as_pointer())

    def load(self, base, offset):
        """The scalar base[offset]."""
        return self.b.load(self.b.gep(base, [offset]))

    def load_vector(self, base, offset):
        """base[offset : offset + 8] (unaligned)."""
        return self.b.load(self._vector_at(base, offset), align=4)

    def store_vector(self, value, base, offset):
        self.b.store(value, self._vector_at(base, offset), align=4)

    def splat(self, scalar):
        """The vector of 8 copies of a float32."""
        v = self.b.insert_element(ir.Constant(VEC, None), scalar, ir.Constant(_I32, 0))
        return self.b.shuffle_vector(v, ir.Constant(VEC, None), ir.Constant(ir.VectorType(_I32, LANES), [0] * LANES))

    def accumulator(self, start=None):
        """A stack slot of a vector (promoted to a register by LLVM), set to start (zeros by default)."""
        slot = cgutils.alloca_once(self.b, VEC)
        self.b.store(ir.Constant(VEC, [0.0] * LANES) if start is None else start, slot)
        return slot

    def accumulators(self, rows, cols, start=None):
        """rows x cols accumulator slots, each set to start (zeros by default)."""
        return [[self.accumulator(start) for _ in range(cols)] for _ in range(rows)]

    def fma_into(self, slot, a, b):
        """slot = a * b + slot, rounded once."""
        self.b.store(self.b.call(self._fma, [a, b, self.b.load(slot)]), slot)

    def transpose(self, rows):
        """The 8 columns of the 8 x 8 block whose rows are the 8 vectors rows, in three rounds of two-vector
        shuffles (interleave pairs of lanes, then pairs of pairs, then halves)."""
        def shuffle(a, b, lanes):
            return self.b.shuffle_vector(a, b, ir.Constant(ir.VectorType(_I32, LANES), lanes))
        pairs = [shuffle(rows[i], rows[i + 1], lanes) for i in range(0, LANES, 2)
                 for lanes in ([0, 8, 1, 9, 4, 12, 5, 13], [2, 10, 3, 11, 6, 14, 7, 15])]
        quads = [shuffle(pairs[a], pairs[a + 2], lanes) for a in (0, 1, 4, 5)
                 for lanes in ([0, 1, 8, 9, 4, 5, 12, 13], [2, 3, 10, 11, 6, 7, 14, 15])]
        return [shuffle(quads[k], quads[k + 4], lanes) for lanes in ([0, 1, 2, 3, 8, 9, 10, 11],
                                                                    [4, 5, 6, 7, 12, 13, 14, 15]) for k in range(4)]

    def horizontal_sum(self, value):
        """The sum of a vector's 8 lanes, left to right."""
        total = self.b.extract_element(value, ir.Constant(_I32, 0))
        for lane in range(1, LANES):
            total = self.b.fadd(total, self.b.extract_element(value, ir.Constant(_I32, lane)))
        return total

    def _vector_at(self, base, offset):
        return self.b.bitcast(self.b.gep(base, [offset]), VEC.as_pointer())
