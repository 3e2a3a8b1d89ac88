"""Helpers for the many small modules that only hold constructor options, show them in their repr and
hand them to one ember.nn.functional call.

torch prints most of these options as `name=value` (f-string formatting) in constructor order; the
activations add `inplace=True` only when it is set. Both rules live here once."""
from .. import functional as F
from .module import Module


def options_repr(module, names):
    """'a=1, b=2' for the module's attributes `names`, each formatted as an f-string would."""
    return ", ".join(f"{name}={getattr(module, name)}" for name in names)


def with_inplace(text, inplace):
    """The activation repr rule: `inplace=True` is appended when set, and nothing is said when it is not."""
    if not inplace:
        return text
    if not text:
        return "inplace=True"
    return text + ", inplace=True"


class OptionsModule(Module):
    """A Module whose extra_repr lists the attributes named in `_shown` (the mention of `inplace`
    follows with_inplace when `_shows_inplace`)."""
    _shown = ()
    _shows_inplace = False

    def _keep(self, **options):
        """Store the options as attributes, in the order given."""
        for name, value in options.items():
            setattr(self, name, value)

    def extra_repr(self):
        text = options_repr(self, self._shown)
        if self._shows_inplace:
            return with_inplace(text, self.inplace)
        return text


class FunctionalModule(OptionsModule):
    """forward(input) = F.<_functional>(input, *<attributes named in _passes>, **<those in _keywords>).

    The positional/keyword split is torch's for each module: fx records a call as it is written. The
    function is looked up on each call, so a patched F (as fx tracing does) is honoured."""
    _functional = None
    _passes = ()
    _keywords = ()

    def forward(self, input):
        function = getattr(F, self._functional)
        args = [getattr(self, name) for name in self._passes]
        kwargs = {name: getattr(self, name) for name in self._keywords}
        return function(input, *args, **kwargs)
