"""torch.distributed.checkpoint.api: CheckpointException, what save and load raise when a rank failed."""
import traceback

__all__ = ["CheckpointException"]


class CheckpointException(BaseException):
    """The failures of a checkpoint step, per rank ({rank: exception}); a BaseException, as torch's."""

    def __init__(self, msg, failures):
        super().__init__(msg, failures)
        self._failures = failures

    @property
    def failures(self):
        return self._failures

    def __str__(self):
        text = f"CheckpointException ranks:{self._failures.keys()}\n"
        for rank, error in self._failures.items():
            lines = traceback.format_exception(type(error), error, error.__traceback__)
            text += f"Traceback (most recent call last): (RANK {rank})\n" + "".join(lines[1:])
        return text
