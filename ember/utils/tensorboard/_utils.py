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
    b, t, c, h, w = V.shape
    if V.dtype == np.uint8:
        V = np.float32(V) / 255.0
    if b & (b - 1) != 0:  # not a power of two: pad with black videos up to the next one
        padded = 2 ** b.bit_length()
        V = np.concatenate((V, np.zeros((padded - b, t, c, h, w))), axis=0)
    n_rows = 2 ** ((b.bit_length() - 1) // 2)
    n_cols = V.shape[0] // n_rows
    V = V.reshape(n_rows, n_cols, t, c, h, w)
    V = V.transpose(2, 0, 4, 1, 5, 3)  # t, row, h, col, w, c
    return V.reshape(t, n_rows * h, n_cols * w, c)


def make_grid(I, ncols=8):
    """N1HW or N3HW images tiled row by row into one 3HW canvas at most `ncols` images wide (the rest black)."""
    if not isinstance(I, np.ndarray):
        raise AssertionError("plugin error, should pass numpy array here")
    if I.shape[1] == 1:
        I = np.concatenate([I, I, I], 1)
    if I.ndim != 4 or I.shape[1] != 3:
        raise AssertionError("Input should be a 4D numpy array with 3 channels")
    n, _, H, W = I.shape
    ncols = min(n, ncols)
    nrows = -(-n // ncols)
    canvas = np.zeros((3, H * nrows, W * ncols), dtype=I.dtype)
    for i in range(n):
        row, col = divmod(i, ncols)
        canvas[:, row * H:(row + 1) * H, col * W:(col + 1) * W] = I[i]
    return canvas


def convert_to_HWC(tensor, input_format):
    """An array in `input_format` (some order of N, C, H, W; or HW) as one HWC image with 3 or 4 channels: a
    batch is tiled by make_grid, one channel or no channel is repeated to RGB."""
    if len(set(input_format)) != len(input_format):
        raise AssertionError(f"You can not use the same dimension shorthand twice. input_format: {input_format}")
    if tensor.ndim != len(input_format):
        raise AssertionError(f"size of input tensor and input format are different. tensor shape: "
                             f"{tensor.shape}, input_format: {input_format}")
    input_format = input_format.upper()
    if len(input_format) == 4:
        nchw = tensor.transpose([input_format.find(c) for c in "NCHW"])
        return make_grid(nchw).transpose(1, 2, 0)
    if len(input_format) == 3:
        hwc = tensor.transpose([input_format.find(c) for c in "HWC"])
        if hwc.shape[2] == 1:
            hwc = np.concatenate([hwc, hwc, hwc], 2)
        return hwc
    if len(input_format) == 2:
        hw = tensor.transpose([input_format.find(c) for c in "HW"])
        return np.stack([hw, hw, hw], 2)
    raise AssertionError(f"input_format should be 2 to 4 of N, C, H, W (HW, CHW, HWC, NCHW ...); got {input_format}")
