"""ember.utils.tensorboard: SummaryWriter, as torch.utils.tensorboard, writing TensorBoard event files.

The summaries are TensorBoard's own protobufs and the files are written by TensorBoard's EventFileWriter, so
the `tensorboard` package is needed (an optional extra: pip install 'ember[tensorboard]'); it is imported
here, never by `import ember`."""
try:
    import tensorboard as _tensorboard
except ImportError as e:
    raise ImportError("ember.utils.tensorboard needs the tensorboard package: pip install 'ember[tensorboard]' "
                      "(or pip install tensorboard)") from e


def _version_tuple(text):
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits or 0))
    return tuple(parts)


# torch refuses TensorBoard older than 1.15 (its summary protos and EventFileWriter), and so does ember
if _version_tuple(getattr(_tensorboard, "__version__", "0")) < (1, 15):
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above; "
                      "pip install -U 'ember[tensorboard]'")

from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402

from .writer import FileWriter, SummaryWriter  # noqa: E402

__all__ = ["FileWriter", "RecordWriter", "SummaryWriter"]
