"""torch.return_types: the named tuples ops return, e.g. max(x, dim) -> max(values, indices).

Like torch's structseq types these are plain tuples (indexing, unpacking, `+`, slicing give
tuples) with named fields, a torch-style repr and pickling by name.
"""
import operator


class _ReturnType(tuple):
    """Base of every return type; subclasses set _fields."""
    __slots__ = ()
    _fields = ()

    def __new__(cls, sequence):
        values = tuple(sequence)
        if len(values) != len(cls._fields):
            raise TypeError(f"torch.return_types.{cls.__name__}() takes a {len(cls._fields)}-sequence "
                            f"({len(values)}-sequence given)")
        return tuple.__new__(cls, values)

    @property
    def n_fields(self):
        return len(self._fields)

    n_sequence_fields = n_fields

    def __repr__(self):
        body = ",\n".join(f"{name}={value!r}" for name, value in zip(self._fields, self))
        return f"torch.return_types.{type(self).__name__}(\n{body})"

    __str__ = __repr__

    def __reduce__(self):
        return (type(self), (tuple(self),))


def _declare(name, fields):
    attrs = {"__slots__": (), "_fields": fields, "__module__": __name__, "__qualname__": name}
    for i, field in enumerate(fields):
        attrs[field] = property(operator.itemgetter(i), doc=f"Alias for field number {i}")
    cls = type(name, (_ReturnType,), attrs)
    globals()[name] = cls
    return cls


_VALUES_INDICES = ("values", "indices")

# reductions, scans and sorting (ember/_ops/reduction.py, scan.py, sorting.py)
for _name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin"):
    _declare(_name, _VALUES_INDICES)
_declare("aminmax", ("min", "max"))
_declare("histogram", ("hist", "bin_edges"))
_declare("histogramdd", ("hist", "bin_edges"))
_declare("frexp", ("mantissa", "exponent"))

# linear algebra (declared here so every family shares one module, as torch does)
_declare("svd", ("U", "S", "V"))
_declare("linalg_svd", ("U", "S", "Vh"))
_declare("qr", ("Q", "R"))
_declare("linalg_qr", ("Q", "R"))
_declare("slogdet", ("sign", "logabsdet"))
_declare("linalg_slogdet", ("sign", "logabsdet"))
_declare("linalg_eigh", ("eigenvalues", "eigenvectors"))
_declare("linalg_eig", ("eigenvalues", "eigenvectors"))
_declare("linalg_inv_ex", ("inverse", "info"))
_declare("linalg_cholesky_ex", ("L", "info"))
_declare("linalg_solve_ex", ("result", "info"))
_declare("linalg_lu", ("P", "L", "U"))
_declare("linalg_lu_factor", ("LU", "pivots"))
_declare("linalg_lu_factor_ex", ("LU", "pivots", "info"))
_declare("linalg_lstsq", ("solution", "residuals", "rank", "singular_values"))
_declare("lu_unpack", ("P", "L", "U"))
_declare("triangular_solve", ("solution", "cloned_coefficient"))
_declare("geqrf", ("a", "tau"))
_declare("linalg_ldl_factor", ("LD", "pivots"))
_declare("linalg_ldl_factor_ex", ("LD", "pivots", "info"))

del _name
