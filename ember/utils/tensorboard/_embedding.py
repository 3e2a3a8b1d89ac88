"""The embedding projector's files (tensors.tsv, metadata.tsv, sprite.png, projector_config.pbtxt), written
through TensorBoard's gfile as torch writes them, so a log_dir may be any path gfile opens."""
import math

import numpy as np
from tensorboard.compat import tf
from tensorboard.plugins.projector.projector_config_pb2 import EmbeddingInfo

from ._convert_np import make_np
from ._utils import make_grid


def _join(a, b):
    # real TensorFlow's gfile has join(); TensorBoard's stand-in keeps it on the filesystem object
    if hasattr(tf.io.gfile, "join"):
        return tf.io.gfile.join(a, b)
    return tf.io.gfile.get_filesystem(a).join(a, b)


def _write(path, data):
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(data)


def make_tsv(metadata, save_path, metadata_header=None):
    """metadata.tsv: one label a line, or (with a header) one tab-separated row a line under the header."""
    if not metadata_header:
        lines = [str(x) for x in metadata]
    else:
        if len(metadata_header) != len(metadata[0]):
            raise AssertionError("len of header must be equal to the number of columns in metadata")
        lines = ["\t".join(str(e) for e in row) for row in [metadata_header] + list(metadata)]
    _write(_join(save_path, "metadata.tsv"), ("\n".join(lines) + "\n").encode("utf-8"))


def make_sprite(label_img, save_path):
    """sprite.png: the N1HW/N3HW label images (values in [0, 1]) tiled ceil(sqrt(N)) to a row on a square
    black canvas as wide as that grid."""
    from PIL import Image
    images = make_np(label_img)
    per_row = math.ceil(images.shape[0] ** 0.5)
    grid = make_grid(images, ncols=per_row).transpose(1, 2, 0)  # HWC
    square = np.zeros((grid.shape[1], grid.shape[1], 3))
    square[:grid.shape[0]] = grid
    img = Image.fromarray(np.uint8((square * 255).clip(0, 255)))
    import io
    with io.BytesIO() as buf:
        img.save(buf, format="PNG")
        _write(_join(save_path, "sprite.png"), buf.getvalue())


def get_embedding_info(metadata, label_img, subdir, global_step, tag):
    """The projector's EmbeddingInfo for the files of one add_embedding call under `subdir`."""
    info = EmbeddingInfo()
    info.tensor_name = f"{tag}:{str(global_step).zfill(5)}"
    info.tensor_path = _join(subdir, "tensors.tsv")
    if metadata is not None:
        info.metadata_path = _join(subdir, "metadata.tsv")
    if label_img is not None:
        shape = label_img.shape
        info.sprite.image_path = _join(subdir, "sprite.png")
        info.sprite.single_image_dim.extend([shape[3], shape[2]])  # width, height
    return info


def write_pbtxt(save_path, contents):
    """projector_config.pbtxt, the projector's text-format config."""
    _write(_join(save_path, "projector_config.pbtxt"), contents.encode("utf-8"))


def make_mat(matlist, save_path):
    """tensors.tsv: one point a line, its coordinates tab-separated as Python prints the numbers."""
    with tf.io.gfile.GFile(_join(save_path, "tensors.tsv"), "wb") as f:
        for row in matlist:
            f.write(("\t".join(str(v.item()) for v in row) + "\n").encode("utf-8"))
