"""torch.distributed.GradBucket: what a DDP communication hook gets (ember/nn/parallel/_reducer.py)."""


class GradBucket:
    """torch.distributed.GradBucket, what a communication hook gets: one bucket's flat gradients (buffer()),
    its position, and its parameters with their gradients as views of the buffer."""

    def __init__(self, index, bucket, params, is_last):
        self._index = index
        self._bucket = bucket
        self._params = [params[i] for i in bucket.indices]
        self._is_last = is_last

    def index(self):
        return self._index

    def buffer(self):
        return self._bucket.flat

    def set_buffer(self, tensor):
        """Replace the buffer the hook works on (a compressed copy, say); the bucket keeps its own."""
        self._bucket.flat = tensor

    def gradients(self):
        return list(self._bucket.views)

    def parameters(self):
        return list(self._params)

    def is_last(self):
        return self._is_last
