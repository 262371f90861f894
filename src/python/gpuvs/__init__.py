# SPDX-License-Identifier: Apache-2.0
"""gpuvs from Python: which accelerator should run your model, how fast, will it fit, what will it cost.

Each function runs the gpuvs command of the same name in this process, through the library the command line is
built from, and returns what ``gpuvs COMMAND --json`` prints, as dicts and lists with the same keys and units.
Keyword arguments are the command's flags: ``seq_len=4096`` is ``--seq-len 4096``, ``True`` a bare flag, a list a
repeated flag, a dict an option list (``options={"seq_len": 128}`` is ``--options 'seq_len=128'``); ``None`` and
``False`` leave a flag out. A workload is a built-in id, a model file's path, a ``Model`` held in memory
(``from_torch(module, example_input)``, ``from_keras(model)``), ONNX bytes or model JSON text. The defaults, the assumptions said and the errors are the command line's: bad input
raises ``InputError`` (a ``ValueError``) with the one-line message ``gpuvs`` prints before exiting 2.

    >>> import gpuvs
    >>> gpuvs.compare(["rtx-4090", "a100-80gb-sxm"], workload="llama3-8b")["gpus"][0]["throughput"]
"""
import json
import os

from . import _gpuvs
from ._gpuvs import Error, InputError

__version__ = _gpuvs.__version__
__all__ = ["Error", "InputError", "Model", "from_torch", "from_keras", "run", "predict", "compare", "advise", "graph",
           "catalog", "workloads", "validate", "to_pandas"]


class Model:
    """A model held in memory, read by the importers model files go through: ONNX or GGUF bytes, or the text of a
    model JSON (Keras ``model.to_json()``, a Hugging Face config, gpuvs's own) or TOML file. ``name`` ends in .onnx,
    .gguf, .json or .toml and is how the answers and errors name it. Pass it wherever a workload goes."""

    def __init__(self, data, name):
        self.data = data.encode() if isinstance(data, str) else bytes(data)
        self.name = name

    def __repr__(self):
        return f"gpuvs.Model({self.name!r}, {len(self.data)} bytes)"


def from_torch(module, example_input, name=None, opset=14):
    """A ``torch.nn.Module`` as gpuvs reads it: exported to ONNX in memory with ``example_input`` (a tensor or a
    tuple of them; their first dimension is the batch, left symbolic so that ``batch=`` sets it). The module is
    exported in eval mode and left in the mode it was in."""
    import io
    import torch

    inputs = example_input if isinstance(example_input, tuple) else (example_input,)
    input_names = ["input"] if len(inputs) == 1 else [f"input{i}" for i in range(len(inputs))]
    axes = {n: {0: "batch"} for n in input_names}
    axes["output"] = {0: "batch"}
    buffer = io.BytesIO()
    training = module.training
    module.eval()
    try:
        with torch.no_grad():
            torch.onnx.export(module, inputs, buffer, input_names=input_names, output_names=["output"],
                              dynamic_axes=axes, opset_version=opset)
    finally:
        module.train(training)
    return Model(buffer.getvalue(), f"torch:{name or type(module).__name__}.onnx")


def from_keras(model):
    """A Keras model as gpuvs reads it: the text of its ``to_json()``."""
    return Model(model.to_json(), f"keras:{getattr(model, 'name', None) or 'model'}.json")


def _workload(value, held):
    """What a command line names for `value`: a built-in id or a path as given; a Model, ONNX or GGUF bytes (told
    apart by GGUF's magic) or model JSON text held for the call under its name."""
    if isinstance(value, (bytes, bytearray)):
        value = Model(value, "memory:model.gguf" if bytes(value[:4]) == b"GGUF" else "memory:model.onnx")
    elif isinstance(value, str) and value.lstrip().startswith("{"):
        value = Model(value, "memory:model.json")
    elif hasattr(value, "forward") and hasattr(value, "state_dict"):
        raise InputError("a torch.nn.Module needs an example input: gpuvs.from_torch(module, example_input)")
    if isinstance(value, Model):
        held[value.name] = value.data
        return value.name
    return value


def _text(value):
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _flags(options):
    args = []
    for key, value in options.items():
        if key in ("json", "output", "o"):
            raise InputError(f"gpuvs from Python always returns the JSON document; '{key}' is not an option here")
        if value is None or value is False:
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif isinstance(value, dict):
            args.append(f"{flag}=" + ";".join(f"{k}={_text(v)}" for k, v in value.items()))
        elif isinstance(value, (list, tuple)):
            args.extend(f"{flag}={_text(v)}" for v in value)
        else:
            args.append(f"{flag}={_text(value)}")
    return args


def run(command, *positional, **options):
    """``gpuvs COMMAND POSITIONAL... --FLAGS... --json`` in this process; ``command`` may hold a subcommand
    ("catalog show"). ``help=True`` returns the command's help text. A ``workload=`` option may be a Model."""
    held = {}
    if "workload" in options:
        options["workload"] = _workload(options["workload"], held)
    words = [_text(p) for p in positional]
    return _gpuvs.run_json(command.split() + _flags(options) + (["--"] + words if words else []), held)


def predict(workload=None, gpu=None, **options):
    """``gpuvs predict``: one workload on one catalog GPU (training, or serving with ``mode=``)."""
    return run("predict", workload=workload, gpu=gpu, **options)


def compare(gpus=None, workload=None, **options):
    """``gpuvs compare``: GPUs side by side on one workload (no GPUs: RTX 4090 vs A100 on seed-mlp)."""
    if isinstance(gpus, (str, os.PathLike)):
        gpus = [gpus]
    return run("compare", *(gpus or []), workload=workload, **options)


def advise(**options):
    """``gpuvs advise``: GPU options for a training, fine-tuning or serving scenario, ranked with reasons."""
    return run("advise", **options)


def graph(workload, **options):
    """``gpuvs graph``: a workload's parameters, FLOPs and bytes by op (``ops=True`` for every op)."""
    held = {}
    name = _workload(workload, held)
    return _gpuvs.run_json(["graph"] + _flags(options) + ["--", _text(name)], held)


def catalog(gpu=None, **options):
    """``gpuvs catalog``: every GPU of the catalog, or (``gpu=``) every field of one, with its sources."""
    if gpu is None:
        return run("catalog", **options)
    return _gpuvs.run_json(["catalog"] + _flags(options) + ["show", "--", _text(gpu)])


def workloads():
    """``gpuvs workloads``: the built-in workloads with their family, size and sequence length."""
    return run("workloads")


def validate(data, **options):
    """``gpuvs validate``: the model against published measurements (``held_out=True`` for leave-one-source-out)."""
    return run("validate", data=data, **options)


def to_pandas(doc, rows=None):
    """A pandas DataFrame of ``doc`` as ``-o csv`` tabulates it: a row per element of the lists named in ``rows``
    (default: every list of records in ``doc``), nested fields as dotted columns."""
    import pandas  # only here: gpuvs itself does not need pandas

    if rows is None:
        rows = [k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(e, dict) for e in v)] \
            if isinstance(doc, dict) else []
    columns, table = _gpuvs.records(json.dumps(doc), list(rows))
    return pandas.DataFrame(table, columns=columns)
