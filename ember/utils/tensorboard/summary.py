"""The summaries SummaryWriter writes, as TensorBoard `Summary` protobufs built from NumPy arrays (the same
functions, names and semantics as torch.utils.tensorboard.summary; PNG images are encoded by Pillow, which
the tensorboard package requires, exactly as torch encodes them)."""
import io
import json
import struct

import numpy as np
from google.protobuf import struct_pb2
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.custom_scalar import layout_pb2
from tensorboard.plugins.pr_curve.plugin_data_pb2 import PrCurvePluginData
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData

from ..._tensor import Tensor
from ._convert_np import make_np
from ._utils import _prepare_video, convert_to_HWC

__all__ = ["half_to_int", "int_to_half", "hparams", "scalar", "histogram_raw", "histogram", "make_histogram",
           "image", "image_boxes", "draw_boxes", "make_image", "video", "make_video", "audio", "custom_scalars",
           "text", "tensor_proto", "pr_curve_raw", "pr_curve", "compute_curve", "mesh"]


def half_to_int(f):
    """The bits of `f` as a float32, read as an int32 (what torch stores in a TensorProto's half_val)."""
    return struct.unpack("i", struct.pack("f", f))[0]


def int_to_half(i):
    """half_to_int undone."""
    return struct.unpack("f", struct.pack("i", i))[0]


def _plugin_metadata(plugin_name, content=b""):
    return SummaryMetadata(plugin_data=SummaryMetadata.PluginData(plugin_name=plugin_name, content=content))


def _shape_proto(shape):
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=int(n)) for n in shape])


# ---- hyperparameters -------------------------------------------------------------------------------------

def hparams(hparam_dict=None, metric_dict=None, hparam_domain_discrete=None):
    """The hparams plugin's three summaries (experiment, session start, session end), as torch's."""
    from tensorboard.plugins.hparams.api_pb2 import DataType, Experiment, HParamInfo, MetricInfo, MetricName, Status
    from tensorboard.plugins.hparams.metadata import (EXPERIMENT_TAG, PLUGIN_DATA_VERSION, PLUGIN_NAME,
                                                      SESSION_END_INFO_TAG, SESSION_START_INFO_TAG)
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo

    if not isinstance(hparam_dict, dict):
        raise TypeError("parameter: hparam_dict should be a dictionary, nothing logged.")
    if not isinstance(metric_dict, dict):
        raise TypeError("parameter: metric_dict should be a dictionary, nothing logged.")
    hparam_domain_discrete = hparam_domain_discrete or {}
    if not isinstance(hparam_domain_discrete, dict):
        raise TypeError("parameter: hparam_domain_discrete should be a dictionary, nothing logged.")
    for k, v in hparam_domain_discrete.items():
        if k not in hparam_dict or not isinstance(v, list) or not all(isinstance(d, type(hparam_dict[k]))
                                                                     for d in v):
            raise TypeError(f"parameter: hparam_domain_discrete[{k}] should be a list of same type as "
                            f"hparam_dict[{k}].")

    def domain(k, field):
        if k not in hparam_domain_discrete:
            return None
        return struct_pb2.ListValue(values=[struct_pb2.Value(**{field: d}) for d in hparam_domain_discrete[k]])

    infos = []
    start = SessionStartInfo()
    for k, v in hparam_dict.items():
        if v is None:
            continue
        # (bool is an int: like torch, True is logged as the number 1.0, so the bool branch is never taken)
        if isinstance(v, (int, float)):
            start.hparams[k].number_value = v
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64"),
                                    domain_discrete=domain(k, "number_value")))
        elif isinstance(v, str):
            start.hparams[k].string_value = v
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_STRING"),
                                    domain_discrete=domain(k, "string_value")))
        elif isinstance(v, Tensor):
            start.hparams[k].number_value = make_np(v).reshape(-1)[0]
            infos.append(HParamInfo(name=k, type=DataType.Value("DATA_TYPE_FLOAT64")))
        else:
            raise ValueError("value should be one of int, float, str, bool, or torch.Tensor")

    def summary(tag, **data):
        content = HParamsPluginData(version=PLUGIN_DATA_VERSION, **data).SerializeToString()
        return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata(PLUGIN_NAME, content))])

    experiment = Experiment(hparam_infos=infos, metric_infos=[MetricInfo(name=MetricName(tag=k))
                                                              for k in metric_dict])
    return (summary(EXPERIMENT_TAG, experiment=experiment),
            summary(SESSION_START_INFO_TAG, session_start_info=start),
            summary(SESSION_END_INFO_TAG, session_end_info=SessionEndInfo(status=Status.Value("STATUS_SUCCESS"))))


# ---- scalars and tensors ---------------------------------------------------------------------------------

def scalar(name, tensor, collections=None, new_style=False, double_precision=False):
    """One number as a summary: simple_value, or (new_style) a float/double TensorProto for the scalars plugin."""
    value = make_np(tensor).squeeze()
    if value.ndim != 0:
        raise AssertionError(f"Tensor should contain one element (0 dimensions). Was given size: {value.size} "
                             f"and {value.ndim} dimensions.")
    value = float(value)
    if not new_style:
        return Summary(value=[Summary.Value(tag=name, simple_value=value)])
    if double_precision:
        proto = TensorProto(double_val=[value], dtype="DT_DOUBLE")
    else:
        proto = TensorProto(float_val=[value], dtype="DT_FLOAT")
    return Summary(value=[Summary.Value(tag=name, tensor=proto, metadata=_plugin_metadata("scalars"))])


def _half_vals(x):
    return [half_to_int(v) for v in x.reshape(-1).astype(np.float32).tolist()]


def _complex_vals(x):
    return np.stack([x.real, x.imag], -1).reshape(-1).tolist()


def _plain_vals(x):
    return x.reshape(-1).tolist()


# dtype name -> (TensorProto dtype, the value field, how the values are written); as torch's table (whose
# uint8 row is given twice: the later one, uint32_val, is the one it uses)
_TENSOR_TYPES = {
    "float16": ("DT_HALF", "half_val", _half_vals), "bfloat16": ("DT_BFLOAT16", "half_val", _half_vals),
    "float32": ("DT_FLOAT", "float_val", _plain_vals), "float64": ("DT_DOUBLE", "double_val", _plain_vals),
    "int8": ("DT_INT8", "int_val", _plain_vals), "uint8": ("DT_UINT8", "uint32_val", _plain_vals),
    "int16": ("DT_INT16", "int_val", _plain_vals), "int32": ("DT_INT32", "int_val", _plain_vals),
    "int64": ("DT_INT64", "int64_val", _plain_vals), "bool": ("DT_BOOL", "bool_val", _plain_vals),
    "complex64": ("DT_COMPLEX64", "scomplex_val", _complex_vals),
    "complex128": ("DT_COMPLEX128", "dcomplex_val", _complex_vals),
}


def tensor_proto(tag, tensor):
    """A whole tensor as a TensorProto summary (the "tensor" plugin)."""
    if not isinstance(tensor, Tensor):
        from ... import as_tensor
        tensor = as_tensor(tensor)
    if tensor.numel() * tensor.itemsize >= (1 << 31):
        raise ValueError("tensor is bigger than protocol buffer's hard limit of 2GB in size")
    name = str(tensor.dtype).rsplit(".", 1)[-1]
    if name not in _TENSOR_TYPES:
        raise ValueError(f"{tag} has unsupported tensor dtype {tensor.dtype}")
    dtype, field, values = _TENSOR_TYPES[name]
    x = tensor.detach().cpu()
    x = x.float().numpy() if name == "bfloat16" else x.numpy()
    proto = TensorProto(dtype=dtype, tensor_shape=_shape_proto(x.shape), **{field: values(x)})
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("tensor"), tensor=proto)])


# ---- histograms ------------------------------------------------------------------------------------------

def histogram_raw(name, min, max, num, sum, sum_squares, bucket_limits, bucket_counts):
    """A histogram given by its statistics and buckets (each bucket's right edge and count)."""
    hist = HistogramProto(min=min, max=max, num=num, sum=sum, sum_squares=sum_squares,
                          bucket_limit=bucket_limits, bucket=bucket_counts)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def histogram(name, values, bins, max_bins=None):
    """A histogram of `values` (any shape, made float64) over `bins`, as np.histogram reads them."""
    hist = make_histogram(make_np(values).astype(float), bins, max_bins)
    return Summary(value=[Summary.Value(tag=name, histo=hist)])


def make_histogram(values, bins, max_bins=None):
    """The HistogramProto of `values`: np.histogram's counts, at most `max_bins` of them (neighbours merged),
    cut to the bins from the first to the last non-empty one, plus the empty bin to their left (TensorBoard
    keeps only right edges, so that bin's edge is the left edge of the data)."""
    if values.size == 0:
        raise ValueError("The input has no element.")
    values = values.reshape(-1)
    counts, limits = np.histogram(values, bins=bins)
    n = len(counts)
    if max_bins is not None and n > max_bins:
        group = n // max_bins
        short = n % group  # (torch's arithmetic: pad to a multiple of the group size)
        if short != 0:
            counts = np.concatenate([counts, np.zeros(group - short, counts.dtype)])
        counts = counts.reshape(-1, group).sum(axis=-1)
        limits = np.concatenate([limits[:-1:group], limits[-1:]])
    nonzero = np.flatnonzero(counts)
    if nonzero.size == 0:
        raise ValueError("The histogram is empty, please file a bug report.")
    start, end = int(nonzero[0]), int(nonzero[-1]) + 1
    if start > 0:
        counts = counts[start - 1:end]
    else:
        counts = np.concatenate([[0], counts[:end]])
    limits = limits[start:end + 1]
    return HistogramProto(min=values.min(), max=values.max(), num=len(values), sum=values.sum(),
                          sum_squares=values.dot(values), bucket_limit=limits.tolist(), bucket=counts.tolist())


# ---- images ----------------------------------------------------------------------------------------------

def _scale_factor(x):
    """uint8 images are already 0..255; anything else is taken as 0..1."""
    return 1 if x.dtype == np.uint8 else 255


def image(tag, tensor, rescale=1, dataformats="NCHW"):
    """An image (a batch is tiled into a grid) as a PNG summary: float values scaled by 255, uint8 as they
    are, then clipped to 0..255."""
    hwc = convert_to_HWC(make_np(tensor), dataformats)
    factor = _scale_factor(hwc)
    pixels = (hwc.astype(np.float32) * factor).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_image(pixels, rescale=rescale))])


def image_boxes(tag, tensor_image, tensor_boxes, rescale=1, dataformats="CHW", labels=None):
    """An image with boxes (rows of xmin, ymin, xmax, ymax) drawn on it in red, optionally labelled."""
    hwc = convert_to_HWC(make_np(tensor_image), dataformats)
    boxes = make_np(tensor_boxes)
    pixels = hwc.astype(np.float32) * _scale_factor(hwc)
    img = make_image(pixels.clip(0, 255).astype(np.uint8), rescale=rescale, rois=boxes, labels=labels)
    return Summary(value=[Summary.Value(tag=tag, image=img)])


def _draw_box(image, xmin, ymin, xmax, ymax, label, color="black", color_text="black", thickness=2):
    from PIL import ImageDraw, ImageFont
    font = ImageFont.load_default()
    draw = ImageDraw.Draw(image)
    corners = [(xmin, ymin), (xmin, ymax), (xmax, ymax), (xmax, ymin), (xmin, ymin)]
    draw.line(corners, width=thickness, fill=color)
    if label:
        left, top, right, bottom = font.getbbox(label)
        text_w, text_h = right - left, bottom - top
        margin = np.ceil(0.05 * text_h)
        draw.rectangle([(xmin, ymax - text_h - 2 * margin), (xmin + text_w, ymax)], fill=color)
        draw.text((xmin + margin, ymax - text_h - margin), label, fill=color_text, font=font)
    return image


def draw_boxes(disp_image, boxes, labels=None):
    """`boxes` drawn in red on the PIL image `disp_image`, each with its label if `labels` is given."""
    for i in range(boxes.shape[0]):
        x0, y0, x1, y1 = boxes[i, 0], boxes[i, 1], boxes[i, 2], boxes[i, 3]
        disp_image = _draw_box(disp_image, x0, y0, x1, y1, None if labels is None else labels[i], color="Red")
    return disp_image


def make_image(tensor, rescale=1, rois=None, labels=None):
    """An HWC uint8 array as a Summary.Image: PNG by Pillow after a Lanczos resize by `rescale` (the height and
    width recorded are the array's, as torch records them)."""
    from PIL import Image
    height, width, channels = tensor.shape
    img = Image.fromarray(tensor)
    if rois is not None:
        img = draw_boxes(img, rois, labels=labels)
    img = img.resize((int(width * rescale), int(height * rescale)), Image.Resampling.LANCZOS)
    with io.BytesIO() as buf:
        img.save(buf, format="PNG")
        png = buf.getvalue()
    return Summary.Image(height=height, width=width, colorspace=channels, encoded_image_string=png)


# ---- video and audio -------------------------------------------------------------------------------------

def video(tag, tensor, fps=4):
    """A [batch, time, channel, height, width] video as an animated GIF summary (see make_video)."""
    frames = _prepare_video(make_np(tensor))
    factor = _scale_factor(frames)
    frames = (frames.astype(np.float32) * factor).clip(0, 255).astype(np.uint8)
    return Summary(value=[Summary.Value(tag=tag, image=make_video(frames, fps))])


def make_video(tensor, fps):
    """[time, height, width, channel] uint8 frames as an animated GIF Summary.Image.

    ember differs from torch here: torch encodes through moviepy (and, without it, prints a line and writes an
    empty image); ember encodes the GIF with Pillow, which the tensorboard extra installs. The frames are the
    same; the GIF bytes (palette, timing encoding) are Pillow's."""
    from PIL import Image
    t, h, w, c = tensor.shape
    if c == 1:
        tensor = np.repeat(tensor, 3, axis=3)
    mode = "RGBA" if c == 4 else "RGB"
    images = [Image.fromarray(np.ascontiguousarray(frame), mode) for frame in tensor]
    with io.BytesIO() as buf:
        images[0].save(buf, format="GIF", save_all=True, append_images=images[1:],
                       duration=int(round(1000 / fps)), loop=0)
        gif = buf.getvalue()
    return Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=gif)


def audio(tag, tensor, sample_rate=44100):
    """A mono clip (values in [-1, 1], clipped if beyond) as a 16-bit WAV summary."""
    import wave
    samples = make_np(tensor).squeeze()
    if abs(samples).max() > 1:
        print("warning: audio amplitude out of range, auto clipped.")
        samples = samples.clip(-1, 1)
    if samples.ndim != 1:
        raise AssertionError("input tensor should be 1 dimensional.")
    pcm = (samples * np.iinfo(np.int16).max).astype("<i2")
    with io.BytesIO() as buf:
        with wave.open(buf, "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(sample_rate)
            out.writeframes(pcm.tobytes())
        wav = buf.getvalue()
    clip = Summary.Audio(sample_rate=sample_rate, num_channels=1, length_frames=pcm.shape[-1],
                         encoded_audio_string=wav, content_type="audio/wav")
    return Summary(value=[Summary.Value(tag=tag, audio=clip)])


# ---- custom scalars, text, PR curves, meshes --------------------------------------------------------------

def custom_scalars(layout):
    """The custom-scalars plugin's layout: {category: {chart title: ["Multiline", tags] or ["Margin",
    [value, lower, upper]]}}."""
    categories = []
    for category, charts_of in layout.items():
        charts = []
        for title, (kind, tags) in ((t, (m[0], m[1])) for t, m in charts_of.items()):
            if kind == "Margin":
                if len(tags) != 3:
                    raise AssertionError("len(tags) != 3")
                series = layout_pb2.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                charts.append(layout_pb2.Chart(title=title, margin=layout_pb2.MarginChartContent(series=[series])))
            else:
                charts.append(layout_pb2.Chart(title=title, multiline=layout_pb2.MultilineChartContent(tag=tags)))
        categories.append(layout_pb2.Category(title=category, chart=charts))
    proto = TensorProto(dtype="DT_STRING", string_val=[layout_pb2.Layout(category=categories).SerializeToString()],
                        tensor_shape=TensorShapeProto())
    return Summary(value=[Summary.Value(tag="custom_scalars__config__", tensor=proto,
                                        metadata=_plugin_metadata("custom_scalars"))])


def text(tag, text):
    """A string for the text plugin, under `tag`/text_summary."""
    content = TextPluginData(version=0).SerializeToString()
    proto = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf_8")], tensor_shape=_shape_proto([1]))
    return Summary(value=[Summary.Value(tag=tag + "/text_summary", metadata=_plugin_metadata("text", content),
                                        tensor=proto)])


def _pr_summary(tag, data, num_thresholds):
    content = PrCurvePluginData(version=0, num_thresholds=num_thresholds).SerializeToString()
    proto = TensorProto(dtype="DT_FLOAT", float_val=data.reshape(-1).tolist(), tensor_shape=_shape_proto(data.shape))
    return Summary(value=[Summary.Value(tag=tag, metadata=_plugin_metadata("pr_curves", content), tensor=proto)])


def pr_curve_raw(tag, tp, fp, tn, fn, precision, recall, num_thresholds=127, weights=None):
    """A PR curve from its six rows of counts and rates, one column per threshold (`weights` is unused, as in
    torch); at most 127 thresholds are recorded."""
    rows = [make_np(r) if isinstance(r, Tensor) else r for r in (tp, fp, tn, fn, precision, recall)]
    return _pr_summary(tag, np.stack(rows), min(num_thresholds, 127))


def pr_curve(tag, labels, predictions, num_thresholds=127, weights=None):
    """A PR curve of `predictions` in [0, 1] against boolean `labels` (see compute_curve)."""
    num_thresholds = min(num_thresholds, 127)
    data = compute_curve(labels, predictions, num_thresholds=num_thresholds, weights=weights)
    return _pr_summary(tag, data, num_thresholds)


def compute_curve(labels, predictions, num_thresholds=None, weights=None):
    """tp, fp, tn, fn, precision, recall at `num_thresholds` equally spaced thresholds: each prediction falls in
    the bucket floor(p * (num_thresholds - 1)), and a threshold counts the buckets at or above it."""
    tiny = 1e-7  # (the smallest denominator, so an empty threshold has precision and recall 0)
    if weights is None:
        weights = 1.0
    elif isinstance(weights, Tensor):
        weights = make_np(weights)
    buckets = np.int32(np.floor(predictions * (num_thresholds - 1)))
    positive = labels.astype(np.float64)
    span = (0, num_thresholds - 1)
    tp_per_bucket, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=positive * weights)
    fp_per_bucket, _ = np.histogram(buckets, bins=num_thresholds, range=span, weights=(1.0 - positive) * weights)
    tp = np.cumsum(tp_per_bucket[::-1])[::-1]
    fp = np.cumsum(fp_per_bucket[::-1])[::-1]
    tn = fp[0] - fp
    fn = tp[0] - tp
    precision = tp / np.maximum(tiny, tp + fp)
    recall = tp / np.maximum(tiny, tp + fn)
    return np.stack((tp, fp, tn, fn, precision, recall))


def _mesh_value(name, display_name, description, tensor, content_type, components, json_config):
    from tensorboard.plugins.mesh import metadata
    x = make_np(tensor) if isinstance(tensor, Tensor) else np.asarray(tensor)
    meta = metadata.create_summary_metadata(name, display_name, content_type, components, list(x.shape),
                                            description, json_config=json_config)
    if x.ndim != 3:  # (create_summary_metadata has refused other shapes already)
        raise ValueError(f"Tensor shape should be of shape BxNx3, but got {list(x.shape)}.")
    proto = TensorProto(dtype="DT_FLOAT", float_val=x.reshape(-1).tolist(), tensor_shape=_shape_proto(x.shape))
    return Summary.Value(tag=metadata.get_instance_name(name, content_type), tensor=proto, metadata=meta)


def mesh(tag, vertices, colors, faces, config_dict, display_name=None, description=None):
    """A mesh or point cloud for the mesh plugin: one summary value each for the [B, N, 3] vertices, faces and
    colors given (None ones are left out); `config_dict` is the three.js configuration, kept as JSON."""
    from tensorboard.plugins.mesh import metadata
    from tensorboard.plugins.mesh.plugin_data_pb2 import MeshPluginData
    json_config = "{}" if config_dict is None else json.dumps(config_dict, sort_keys=True)
    parts = [(t, kind) for t, kind in ((vertices, MeshPluginData.VERTEX), (faces, MeshPluginData.FACE),
                                       (colors, MeshPluginData.COLOR)) if t is not None]
    components = metadata.get_components_bitmask([kind for _, kind in parts])
    return Summary(value=[_mesh_value(tag, display_name, description, t, kind, components, json_config)
                          for t, kind in parts])
