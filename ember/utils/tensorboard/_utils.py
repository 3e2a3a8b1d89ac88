"""Array layout helpers of the image, video and figure summaries (NumPy in, NumPy out), as torch's
torch/utils/tensorboard/_utils.py."""
import numpy as np


def figure_to_image(figures, close=True):
    """A matplotlib figure rendered by Agg as a CHW uint8 RGB array (a list of figures: NCHW); matplotlib is
    imported here, on first use, as torch does."""
    import matplotlib.backends.backend_agg as backend_agg
    import matplotlib.pyplot as plt

    def render(figure):
        canvas = backend_agg.FigureCanvasAgg(figure)
        canvas.draw()
        rgba = np.frombuffer(canvas.buffer_rgba(), dtype=np.uint8)
        width, height = figure.canvas.get_width_height()
        hwc = rgba.reshape(height, width, 4)[:, :, :3]
        if close:
            plt.close(figure)
        return np.moveaxis(hwc, 2, 0)

    if isinstance(figures, list):
        return np.stack([render(f) for f in figures])
    return render(figures)


def _prepare_video(V):
    """A [batch, time, channel, height, width] video as [time, height', width', channel] frames: the batch
    (zero-padded to a power of two) laid out as a grid in each frame; uint8 becomes float in [0, 1]."""
    batch, frames, chans, height, width = V.shape
    if V.dtype == np.uint8:
        V = np.float32(V) / 255.0
    if batch & (batch - 1):  # not a power of two: append black videos up to the next one
        blank = np.zeros((2 ** batch.bit_length() - batch, frames, chans, height, width))
        V = np.concatenate((V, blank), axis=0)
    rows = 2 ** ((batch.bit_length() - 1) // 2)
    cols = V.shape[0] // rows
    grid = V.reshape(rows, cols, frames, chans, height, width)
    # -> frames, rows, height, cols, width, chans: each frame is the grid of all videos at that time step
    return grid.transpose(2, 0, 4, 1, 5, 3).reshape(frames, rows * height, cols * width, chans)


def make_grid(I, ncols=8):
    """N1HW or N3HW images tiled row by row into one 3HW canvas at most `ncols` images wide (the rest black)."""
    if not isinstance(I, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if I.shape[1] == 1:  # grey: repeat the channel to RGB
        I = np.repeat(I, 3, axis=1)
    if I.ndim != 4 or I.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    count, _, height, width = I.shape
    cols = min(count, ncols)
    rows = -(-count // cols)
    # Pad the batch with black tiles to fill the last row, then fold (row, col) into the canvas axes.
    tiles = np.zeros((rows * cols, 3, height, width), dtype=I.dtype)
    tiles[:count] = I
    tiles = tiles.reshape(rows, cols, 3, height, width).transpose(2, 0, 3, 1, 4)
    return tiles.reshape(3, rows * height, cols * width)


# The axis order each input rank is brought to before it becomes HWC.
_CANONICAL_LAYOUT = {4: "NCHW", 3: "HWC", 2: "HW"}


def convert_to_HWC(tensor, input_format):
    """An array in `input_format` (some order of N, C, H, W; or HW) as one HWC image with 3 or 4 channels: a
    batch is tiled by make_grid, one channel or no channel is repeated to RGB."""
    if len(set(input_format)) < len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if tensor.ndim != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: "
                             f"{tensor.shape}, input_format: {input_format}")
    layout = input_format.upper()
    target = _CANONICAL_LAYOUT.get(len(layout))
    if target is None:
        raise AssertionError(f"input_format should be 2 to 4 of N, C, H, W (HW, CHW, HWC, NCHW ...); got {layout}")
    image = tensor.transpose([layout.find(axis) for axis in target])
    if target == "NCHW":
        return make_grid(image).transpose(1, 2, 0)
    if target == "HW":
        return np.stack([image] * 3, axis=2)
    return np.repeat(image, 3, axis=2) if image.shape[2] == 1 else image
