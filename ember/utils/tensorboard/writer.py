"""SummaryWriter and FileWriter, as torch.utils.tensorboard.writer: summaries built by .summary, appended to
event files by TensorBoard's EventFileWriter (a queue flushed by a thread every flush_secs, and on flush()/
close()).

Not built: add_graph (torch's traces the model with TorchScript into a GraphDef of its IR; ember has no such
IR), which raises NotImplementedError. add_video encodes its GIF with Pillow instead of moviepy
(summary.make_video)."""
import os
import time

from tensorboard.compat import tf
from tensorboard.compat.proto import event_pb2
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from ._convert_np import make_np
from ._embedding import get_embedding_info, make_mat, make_sprite, make_tsv, write_pbtxt
from ._utils import figure_to_image
from .summary import (audio, custom_scalars, histogram, histogram_raw, hparams, image, image_boxes, mesh, pr_curve,
                      pr_curve_raw, scalar, tensor_proto, text, video)

__all__ = ["FileWriter", "SummaryWriter"]


def _tensorflow_bins():
    """add_histogram's bins="tensorflow": the edges +-1e-12 * 1.1**k up to 1e20, and 0 (TensorFlow's default
    buckets). Built by repeated multiplication, as torch builds them, so every edge is the same float."""
    edges = []
    v = 1e-12
    while v < 1e20:
        edges.append(v)
        v *= 1.1
    return [-e for e in reversed(edges)] + [0] + edges


_DEFAULT_BINS = _tensorflow_bins()


class FileWriter:
    """One event file in `log_dir`: events are stamped (wall time, step) and queued to TensorBoard's
    EventFileWriter. https://pytorch.org/docs/stable/tensorboard.html"""

    def __init__(self, log_dir, max_queue=10, flush_secs=120, filename_suffix=""):
        self.event_writer = EventFileWriter(str(log_dir), max_queue, flush_secs, filename_suffix)

    def get_logdir(self):
        return self.event_writer.get_logdir()

    def add_event(self, event, step=None, walltime=None):
        event.wall_time = walltime if walltime is not None else time.time()
        if step is not None:
            event.step = int(step)
        self.event_writer.add_event(event)

    def add_summary(self, summary, global_step=None, walltime=None):
        self.add_event(Event(summary=summary), global_step, walltime)

    def add_graph(self, graph_profile, walltime=None):
        """A (GraphDef, RunMetadata) pair: the graph and its step stats, as torch writes them."""
        graph, run_metadata = graph_profile
        self.add_onnx_graph(graph, walltime)
        tagged = event_pb2.TaggedRunMetadata(tag="step1", run_metadata=run_metadata.SerializeToString())
        self.add_event(Event(tagged_run_metadata=tagged), None, walltime)

    def add_onnx_graph(self, graph, walltime=None):
        self.add_event(Event(graph_def=graph.SerializeToString()), None, walltime)

    def flush(self):
        self.event_writer.flush()

    def close(self):
        self.event_writer.close()

    def reopen(self):
        self.event_writer.reopen()


def _onnx_graph(path):
    """The GraphDef TensorBoard shows for an ONNX model file: its inputs and outputs as Variable nodes, then
    one node per operator named by its first output, its attributes as one string (torch's conversion)."""
    try:
        import onnx
    except ImportError as e:
        raise ImportError("add_onnx_graph needs the onnx package: pip install onnx") from e
    from tensorboard.compat.proto.attr_value_pb2 import AttrValue
    from tensorboard.compat.proto.graph_pb2 import GraphDef
    from tensorboard.compat.proto.node_def_pb2 import NodeDef
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
    from tensorboard.compat.proto.versions_pb2 import VersionDef
    g = onnx.load(path).graph
    nodes = []
    for value in list(g.input) + list(g.output):
        tensor_type = value.type.tensor_type
        shape = TensorShapeProto(dim=[TensorShapeProto.Dim(size=d.dim_value) for d in tensor_type.shape.dim])
        nodes.append(NodeDef(name=value.name.encode("utf_8"), op="Variable", input=[],
                             attr={"dtype": AttrValue(type=tensor_type.elem_type), "shape": AttrValue(shape=shape)}))
    for node in g.node:
        params = ", ".join(" = ".join(str(f[1]) for f in a.ListFields()) for a in node.attribute)
        nodes.append(NodeDef(name=node.output[0].encode("utf_8"), op=node.op_type, input=node.input,
                             attr={"parameters": AttrValue(s=params.encode("utf_8"))}))
    return GraphDef(versions=VersionDef(producer=22), node=nodes)


def _default_log_dir(comment):
    """runs/<Mon>DD_HH-MM-SS_<host><comment>, the directory a SummaryWriter without log_dir writes to."""
    import socket
    from datetime import datetime
    started = datetime.now().strftime("%b%d_%H-%M-%S")
    return os.path.join("runs", f"{started}_{socket.gethostname()}{comment}")


def _write_restart_marker(writer, step):
    """A file-version event and a SessionLog START at `step`: TensorBoard then discards the events a previous
    (crashed) run logged from that step on."""
    writer.add_event(Event(step=step, file_version="brain.Event:2"))
    writer.add_event(Event(step=step, session_log=SessionLog(status=SessionLog.START)))


def _escape_for_path(tag):
    """A tag made safe as one directory name: %, / and \\ written as %25, %2f and %5c (% first)."""
    for char, code in (("%", "%25"), ("/", "%2f"), ("\\", "%5c")):
        tag = tag.replace(char, code)
    return tag


def _make_embedding_dir(path):
    """Creates the projector directory of one embedding; an existing one is reused with a warning (printed,
    as torch does), an existing file is an error."""
    gfile = tf.io.gfile
    if not gfile.exists(path):
        gfile.makedirs(path)
    elif gfile.isdir(path):
        print("warning: Embedding dir exists, did you set global_step for add_embedding()?")
    else:
        raise NotADirectoryError(f"Path: `{path}` exists, but is a file. Cannot proceed.")


class SummaryWriter:
    """Writes scalars, histograms, images, text, hyperparameters, PR curves, embeddings ... for TensorBoard,
    as torch.utils.tensorboard.SummaryWriter (https://pytorch.org/docs/stable/tensorboard.html). Values may be
    ember tensors, NumPy arrays or Python numbers wherever torch takes tensors.

    ember differs in: add_graph raises NotImplementedError (no TorchScript IR to draw); add_video writes a
    Pillow GIF rather than moviepy's."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120,
                 filename_suffix=""):
        self.log_dir = log_dir if log_dir else _default_log_dir(comment)
        self.purge_step = purge_step
        self.max_queue, self.flush_secs = max_queue, flush_secs
        self.filename_suffix = filename_suffix
        # file_writer: the main event file; all_writers: it and add_scalars' per-tag runs, by directory.
        # Both are None once closed, and the next add_* reopens them.
        self.file_writer = None
        self.all_writers = None
        self._embeddings_config = None
        self._get_file_writer()
        self.default_bins = _DEFAULT_BINS

    def _new_file_writer(self, directory):
        return FileWriter(directory, self.max_queue, self.flush_secs, self.filename_suffix)

    def _get_file_writer(self):
        """The main FileWriter, made again after close(); a purge_step is written (once) as a restart marker.
        (torch's private name, kept: code written for torch calls it.)"""
        if self.file_writer is not None and self.all_writers is not None:
            return self.file_writer
        main = self._new_file_writer(self.log_dir)
        self.file_writer, self.all_writers = main, {main.get_logdir(): main}
        if self.purge_step is not None:
            _write_restart_marker(main, self.purge_step)
            self.purge_step = None
        return main

    def _log(self, summary, global_step=None, walltime=None):
        """Appends one summary to the main event file."""
        self._get_file_writer().add_summary(summary, global_step, walltime)

    def get_logdir(self):
        return self.log_dir

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None,
                    global_step=None):
        """The hparams summaries and the metrics as scalars, in the sub-run `run_name` (default: the time)."""
        if not (type(hparam_dict) is dict and type(metric_dict) is dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        session_summaries = hparams(hparam_dict, metric_dict, hparam_domain_discrete)
        run_dir = os.path.join(self._get_file_writer().get_logdir(), run_name or str(time.time()))
        with SummaryWriter(log_dir=run_dir) as run:
            for summary in session_summaries:
                run.file_writer.add_summary(summary, global_step)
            for metric, value in metric_dict.items():
                run.add_scalar(metric, value, global_step)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False,
                   double_precision=False):
        self._log(scalar(tag, scalar_value, new_style=new_style, double_precision=double_precision),
                  global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Each value under `main_tag` in its own run, the directory <log_dir>/<main_tag>_<tag> ('/' in
        main_tag made '_'), so TensorBoard draws them on one chart; all share one wall time."""
        stamp = walltime if walltime is not None else time.time()
        prefix = f"{self._get_file_writer().get_logdir()}/{main_tag.replace('/', '_')}_"
        for tag, value in tag_scalar_dict.items():
            run_dir = prefix + tag
            if run_dir not in self.all_writers:
                self.all_writers[run_dir] = self._new_file_writer(run_dir)
            self.all_writers[run_dir].add_summary(scalar(main_tag, value), global_step, stamp)

    def add_tensor(self, tag, tensor, global_step=None, walltime=None):
        self._log(tensor_proto(tag, tensor), global_step, walltime)

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """bins: "tensorflow" (TensorFlow's default buckets), anything np.histogram takes ("auto", "fd", an int,
        edges)."""
        tensorflow_default = isinstance(bins, str) and bins == "tensorflow"
        edges = self.default_bins if tensorflow_default else bins
        self._log(histogram(tag, values, edges, max_bins=max_bins), global_step, walltime)

    def add_histogram_raw(self, tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts,
                          global_step=None, walltime=None):
        if len(bucket_counts) != len(bucket_limits):
            raise ValueError("len(bucket_limits) != len(bucket_counts), see the document.")
        self._log(histogram_raw(tag, min, max, num, sum, sum_squares, bucket_limits, bucket_counts),
                  global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        self._log(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        self._log(image(tag, img_tensor, dataformats=dataformats), global_step, walltime)

    def add_image_with_boxes(self, tag, img_tensor, box_tensor, global_step=None, walltime=None, rescale=1,
                             dataformats="CHW", labels=None):
        """Labels that do not match the boxes one to one are dropped, as torch drops them."""
        if isinstance(labels, str):
            labels = [labels]
        if labels is not None and box_tensor.shape[0] != len(labels):
            labels = None
        self._log(image_boxes(tag, img_tensor, box_tensor, rescale=rescale, dataformats=dataformats,
                              labels=labels), global_step, walltime)

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, as a grid) rendered to an image; needs matplotlib."""
        layout = "NCHW" if isinstance(figure, list) else "CHW"
        self.add_image(tag, figure_to_image(figure, close), global_step, walltime, dataformats=layout)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """A [N, T, C, H, W] video as an animated GIF (encoded by Pillow; torch uses moviepy)."""
        self._log(video(tag, vid_tensor, fps), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        self._log(audio(tag, snd_tensor, sample_rate=sample_rate), global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        self._log(text(tag, text_string), global_step, walltime)

    def add_onnx_graph(self, prototxt):
        """The graph of the ONNX model file `prototxt` (needs the onnx package)."""
        self._get_file_writer().add_onnx_graph(_onnx_graph(prototxt))

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        raise NotImplementedError("ember's SummaryWriter.add_graph is not implemented: torch's draws the "
                                  "TorchScript graph of a traced model, and ember has no TorchScript IR to "
                                  "draw. Everything else SummaryWriter logs is supported.")

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default",
                      metadata_header=None):
        """The projector's files for the points `mat` (N x D) under <log_dir>/<step:05d>/<tag>, and the
        projector config listing every embedding this writer added."""
        points = make_np(mat)
        step = 0 if global_step is None else global_step
        subdir = f"{str(step).zfill(5)}/{_escape_for_path(tag)}"
        target = os.path.join(self._get_file_writer().get_logdir(), subdir)
        _make_embedding_dir(target)
        # Checked and written in this order, so a bad argument leaves the same files behind as torch's.
        if metadata is not None:
            if len(metadata) != points.shape[0]:
                raise AssertionError("#labels should equal with #data points")
            make_tsv(metadata, target, metadata_header=metadata_header)
        if label_img is not None:
            if label_img.shape[0] != points.shape[0]:
                raise AssertionError("#images should equal with #data points")
            make_sprite(label_img, target)
        if points.ndim != 2:
            raise AssertionError("mat should be 2D, where mat.size(0) is the number of data points")
        make_mat(points, target)
        self._record_embedding(get_embedding_info(metadata, label_img, subdir, step, tag))

    def _record_embedding(self, info):
        """Adds one embedding to this writer's projector config and rewrites projector_config.pbtxt."""
        from google.protobuf import text_format
        if self._embeddings_config is None:
            self._embeddings_config = ProjectorConfig()
        self._embeddings_config.embeddings.extend([info])
        write_pbtxt(self._get_file_writer().get_logdir(), text_format.MessageToString(self._embeddings_config))

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None,
                     walltime=None):
        curve = pr_curve(tag, make_np(labels), make_np(predictions), num_thresholds, weights)
        self._log(curve, global_step, walltime)

    def add_pr_curve_raw(self, tag, true_positive_counts, false_positive_counts, true_negative_counts,
                         false_negative_counts, precision, recall, global_step=None, num_thresholds=127,
                         weights=None, walltime=None):
        counts = (true_positive_counts, false_positive_counts, true_negative_counts, false_negative_counts)
        self._log(pr_curve_raw(tag, *counts, precision, recall, num_thresholds, weights), global_step, walltime)

    def add_custom_scalars_multilinechart(self, tags, category="default", title="untitled"):
        self._log(custom_scalars({category: {title: ["Multiline", tags]}}))

    def add_custom_scalars_marginchart(self, tags, category="default", title="untitled"):
        if len(tags) != 3:
            raise AssertionError(f"Expected 3 tags, got {len(tags)}.")
        self._log(custom_scalars({category: {title: ["Margin", tags]}}))

    def add_custom_scalars(self, layout):
        """layout: {category: {chart title: ["Multiline", [tags]] or ["Margin", [value, lower, upper]]}}."""
        self._log(custom_scalars(layout))

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None,
                 walltime=None):
        self._log(mesh(tag, vertices, colors, faces, config_dict), global_step, walltime)

    def _writers(self):
        """Every open FileWriter (none once closed)."""
        return list(self.all_writers.values()) if self.all_writers is not None else []

    def flush(self):
        for writer in self._writers():
            writer.flush()

    def close(self):
        for writer in self._writers():
            writer.flush()
            writer.close()
        self.file_writer = None
        self.all_writers = None

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_val, exc_tb):
        self.close()
