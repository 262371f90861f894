# SPDX-License-Identifier: Apache-2.0
"""`import gpuvs`: the Python module answers as the command line does, in the Python process.

Run by ctest with PYTHONPATH=BUILD/python and GPUVS_BINARY the built gpuvs. The oracle is the binary: each call's
document must equal what `gpuvs ... --json` prints, and each error the line it prints before exiting 2.
"""
import json
import math
import os
import pathlib
import subprocess
import tempfile
import unittest

import gpuvs

BINARY = os.environ["GPUVS_BINARY"]


def cli(*args):
    """(exit code, JSON document or None, stderr) of the binary."""
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    doc = json.loads(r.stdout) if r.returncode == 0 and "--json" in args else None
    return r.returncode, doc, r.stderr


class SameAnswerAsTheCommandLine(unittest.TestCase):
    def assert_same(self, py_doc, *args):
        code, doc, err = cli(*args, "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(py_doc, doc)

    def test_the_issue_example(self):
        doc = gpuvs.compare(["rtx-4090", "a100-80gb-sxm"], workload="llama3-8b")
        self.assertEqual([g["gpu"] for g in doc["gpus"]], ["rtx-4090", "a100-80gb-sxm"])
        self.assert_same(doc, "compare", "rtx-4090", "a100-80gb-sxm", "--workload", "llama3-8b")

    def test_predict_training_and_serving(self):
        self.assert_same(gpuvs.predict("resnet50", gpu="a100-80gb-sxm", batch=64, precision="amp-fp16"),
                         "predict", "--workload", "resnet50", "--gpu", "a100-80gb-sxm", "--batch", "64",
                         "--precision", "amp-fp16")
        self.assert_same(gpuvs.predict("llama3-8b", gpu="h100-sxm", mode="decode"),
                         "predict", "--workload", "llama3-8b", "--gpu", "h100-sxm", "--mode", "decode")

    def test_advise_graph_catalog_workloads(self):
        self.assert_same(gpuvs.advise(workload="llama3-8b", task="infer", top=3),
                         "advise", "--workload", "llama3-8b", "--task", "infer", "--top", "3")
        self.assert_same(gpuvs.graph("bert-base", batch=8, ops=True), "graph", "bert-base", "--batch", "8", "--ops")
        self.assert_same(gpuvs.graph("gpt", options={"layers": 2, "hidden": 256, "heads": 4}),
                         "graph", "gpt", "--options", "layers=2;hidden=256;heads=4")
        self.assert_same(gpuvs.catalog(), "catalog")
        self.assert_same(gpuvs.catalog("h100-sxm"), "catalog", "show", "h100-sxm")
        self.assert_same(gpuvs.workloads(), "workloads")

    def test_documents_hold_to_the_shipped_schemas(self):
        import json_schemas  # Debian's python3-jsonschema; the schemas are data/schemas, installed in share/gpuvs/schemas
        folder = pathlib.Path(os.environ["GPUVS_SCHEMAS"]).resolve()
        for name, doc in [("predict", gpuvs.predict("resnet50", gpu="a100-80gb-sxm")),
                          ("predict", gpuvs.predict("llama3-8b", gpu="h100-sxm", mode="infer")),
                          ("compare", gpuvs.compare(["rtx-4090", "a100-80gb-sxm"], workload="llama3-8b")),
                          ("advise", gpuvs.advise(workload="llama3-8b", task="infer", top=3)),
                          ("graph", gpuvs.graph("bert-base", batch=8, ops=True)),
                          ("catalog", gpuvs.catalog()), ("catalog-show", gpuvs.catalog("h100-sxm")),
                          ("workloads", gpuvs.workloads())]:
            self.assertEqual(json_schemas.errors(folder, f"{name}.schema.json", doc), [], name)

    def test_a_model_file_by_path(self):
        with tempfile.TemporaryDirectory() as d:
            model = pathlib.Path(d) / "m.toml"
            model.write_text('input_shape = [16]\n[[layers]]\ntype = "dense"\nunits = 8\nactivation = "relu"\n'
                             '[[layers]]\ntype = "dense"\nunits = 2\nactivation = "softmax"\n')
            self.assert_same(gpuvs.predict(model, gpu="rtx-4090"), "predict", "--workload", str(model), "--gpu", "rtx-4090")

    def test_one_call_leaves_nothing_behind_for_the_next(self):
        # --facts installs changed system facts for its run only; the next call prices with the built-in ones.
        base = gpuvs.predict("resnet50", gpu="a100-80gb-sxm")
        with tempfile.TemporaryDirectory() as d:
            facts = pathlib.Path(d) / "facts.toml"
            facts.write_text('[memory.runtime]\nvalue = 30\nunit = "GiB"\nsource = "measured: a test"\n')
            changed = gpuvs.predict("resnet50", gpu="a100-80gb-sxm", facts=facts)
        self.assertNotEqual(changed["memory"], base["memory"])
        self.assertEqual(gpuvs.predict("resnet50", gpu="a100-80gb-sxm"), base)

    def test_help_is_the_command_lines(self):
        r = subprocess.run([BINARY, "predict", "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(gpuvs.run("predict", help=True), r.stdout.rstrip("\n") + "\n" if not r.stdout.endswith("\n") else r.stdout)


class SameErrorsAsTheCommandLine(unittest.TestCase):
    def assert_same_error(self, call, *args):
        code, _, err = cli(*args)
        self.assertEqual(code, 2, err)
        line = err.strip().splitlines()[-1]
        self.assertTrue(line.startswith("gpuvs: error: "), line)
        with self.assertRaises(gpuvs.InputError) as caught:
            call()
        self.assertEqual(str(caught.exception), line[len("gpuvs: error: "):])
        self.assertIsInstance(caught.exception, ValueError)
        self.assertIsInstance(caught.exception, gpuvs.Error)

    def test_unknown_ids_and_bad_values(self):
        self.assert_same_error(lambda: gpuvs.predict("llama3-8b", gpu="rtx-9999"),
                               "predict", "--workload", "llama3-8b", "--gpu", "rtx-9999")
        self.assert_same_error(lambda: gpuvs.compare(["rtx-4090"], workload="no-such-model"),
                               "compare", "rtx-4090", "--workload", "no-such-model")
        self.assert_same_error(lambda: gpuvs.predict("resnet50", gpu="rtx-4090", batch=0),
                               "predict", "--workload", "resnet50", "--gpu", "rtx-4090", "--batch", "0")
        self.assert_same_error(lambda: gpuvs.advise(workload="llama3-8b", hours=math.nan),
                               "advise", "--workload", "llama3-8b", "--hours", "nan")
        self.assert_same_error(lambda: gpuvs.run("comapre"), "comapre")
        self.assert_same_error(lambda: gpuvs.predict("resnet50", gpu="rtx-4090", no_such_flag=1),
                               "predict", "--workload", "resnet50", "--gpu", "rtx-4090", "--no-such-flag=1")

    def test_a_missing_file_and_nothing_written(self):
        with tempfile.TemporaryDirectory() as d:
            missing = pathlib.Path(d) / "none.toml"
            self.assert_same_error(lambda: gpuvs.predict(missing, gpu="rtx-4090"),
                                   "predict", "--workload", str(missing), "--gpu", "rtx-4090")
            self.assertEqual(os.listdir(d), [])

    def test_the_document_is_always_json(self):
        with self.assertRaises(gpuvs.InputError):
            gpuvs.compare(output="csv")

    def test_a_command_with_no_document_says_so(self):
        with self.assertRaises(gpuvs.InputError) as caught:
            gpuvs.run("man")
        self.assertEqual(str(caught.exception), "gpuvs man prints no JSON document: run it from the command line")
        with self.assertRaises(gpuvs.InputError) as caught:
            gpuvs.run("history", "x", extra=True)
        self.assertIn("(see gpuvs --help)", str(caught.exception))


KERAS_SEED_MLP = json.dumps({
    "class_name": "Sequential", "keras_version": "2.13.1", "backend": "tensorflow",
    "config": {"name": "sequential", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 780], "dtype": "float32", "name": "input_1"}},
        {"class_name": "Dense", "config": {"name": "dense", "units": 128, "activation": "relu", "use_bias": True}},
        {"class_name": "Dropout", "config": {"name": "dropout", "rate": 0.2}},
        {"class_name": "Dense", "config": {"name": "dense_1", "units": 10, "activation": "softmax", "use_bias": True}}]}})


def without_name(doc):
    return {k: v for k, v in doc.items() if k != "workload"}


class ModelsHeldInMemory(unittest.TestCase):
    """A model the notebook holds (a Keras to_json() text, a torch module) is priced as its file would be."""

    def test_keras_json_text_is_its_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "seed.json"
            path.write_text(KERAS_SEED_MLP)
            code, doc, err = cli("predict", "--workload", str(path), "--gpu", "rtx-4090", "--json")
            self.assertEqual(code, 0, err)
            py = gpuvs.predict(KERAS_SEED_MLP, gpu="rtx-4090")
            self.assertEqual(py["workload"], "sequential")
            self.assertEqual(py, doc)
            self.assertEqual(os.listdir(d), ["seed.json"])  # nothing written beside it

    def test_a_torch_module_on_three_gpus_is_the_cli_on_its_onnx_file(self):
        try:
            import torch
        except ImportError:
            self.skipTest("PyTorch is not installed (python3-torch; scripts/install-deps installs it)")

        class Net(torch.nn.Module):  # the reference workload, written in PyTorch
            def __init__(self):
                super().__init__()
                self.hidden = torch.nn.Linear(780, 128)
                self.drop = torch.nn.Dropout(0.2)
                self.out = torch.nn.Linear(128, 10)

            def forward(self, x):
                return torch.softmax(self.out(self.drop(torch.relu(self.hidden(x)))), dim=-1)

        net = Net()
        net.train()
        model = gpuvs.from_torch(net, torch.randn(4, 780))
        self.assertTrue(net.training)  # left in the mode it was in
        self.assertEqual(model.name, "torch:Net.onnx")
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "net.onnx"
            path.write_bytes(model.data)
            for gpu in ("rtx-4090", "a100-80gb-sxm", "h100-sxm"):
                py = gpuvs.predict(model, gpu=gpu, batch=256)
                code, doc, err = cli("predict", "--workload", str(path), "--gpu", gpu, "--batch", "256", "--json")
                self.assertEqual(code, 0, err)
                self.assertEqual(py["workload"], "torch:Net.onnx")
                self.assertEqual(without_name(py), without_name(doc))
                self.assertEqual(py["params"], 780 * 128 + 128 + 128 * 10 + 10)
                self.assertGreater(py["throughput"]["value"], 0)
        # Its graph, and a module without an example input said as such.
        self.assertEqual(gpuvs.graph(model, batch=8)["params"], 780 * 128 + 128 + 128 * 10 + 10)
        with self.assertRaises(gpuvs.InputError) as caught:
            gpuvs.predict(net, gpu="rtx-4090")
        self.assertIn("from_torch", str(caught.exception))

    def test_gguf_bytes_are_the_file(self):
        seed = pathlib.Path(__file__).resolve().parents[2] / "fuzz" / "corpus" / "gguf" / "llama-q8_0-tied-2-layers.gguf"
        doc = gpuvs.predict(seed.read_bytes(), gpu="rtx-4090", mode="decode")
        code, file_doc, err = cli("predict", "--workload", str(seed), "--gpu", "rtx-4090", "--mode", "decode", "--json")
        self.assertEqual(code, 0, err)
        self.assertEqual(doc["workload"], "memory:model.gguf")
        self.assertEqual((doc["format"], doc["engine"]), ("q8_0", "llama.cpp"))
        self.assertEqual(doc["throughput"], file_doc["throughput"])
        self.assertEqual(doc["memory_per_gpu_gib"], file_doc["memory_per_gpu_gib"])

    def test_saved_weights_load_into_torch_and_give_gpuvs_validation_loss(self):
        """gpuvs train --save-weights writes safetensors that torch.nn.Linear modules load (strict), and PyTorch's
        validation loss on the held-out rows with them is the one gpuvs reported."""
        import json as js
        import struct
        import numpy as np
        import torch

        rng = np.random.default_rng(7)
        x = rng.normal(size=(200, 6)).astype(np.float32)
        y = (x[:, 0] > 0).astype(np.int64) + (x[:, 1] > 0).astype(np.int64)
        with tempfile.TemporaryDirectory() as d:
            d = pathlib.Path(d)
            (d / "data.csv").write_text("".join(",".join(f"{v:.6f}" for v in r) + f",{c}\n" for r, c in zip(x, y)))
            (d / "m.toml").write_text('name = "small"\ninput_shape = [6]\n[[layers]]\ntype = "dense"\nunits = 8\nactivation = "relu"\n'
                                      '[[layers]]\ntype = "dropout"\nrate = 0.2\n[[layers]]\ntype = "dense"\nunits = 3\n'
                                      'activation = "softmax"\n')
            weights = d / "w.safetensors"
            code, doc, err = cli("train", str(d / "m.toml"), "--data", str(d / "data.csv"), "--epochs", "3", "--threads", "1",
                                 "--save-weights", str(weights), "--json")
            self.assertEqual(code, 0, err)
            raw = weights.read_bytes()
        # The format read by hand (Debian packages no safetensors module): length, JSON header, little-endian F32.
        (n,) = struct.unpack("<Q", raw[:8])
        header = js.loads(raw[8:8 + n])
        self.assertEqual(header["__metadata__"]["format"], "pt")
        state = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            self.assertEqual(t["dtype"], "F32")
            begin, end = t["data_offsets"]
            state[name] = torch.from_numpy(np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(t["shape"]).copy())

        class Small(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.dense = torch.nn.Linear(6, 8)
                self.dense_1 = torch.nn.Linear(8, 3)

            def forward(self, v):
                return torch.softmax(self.dense_1(torch.relu(self.dense(v))), dim=1)

        model = Small()
        model.load_state_dict(state, strict=True)
        val = slice(160, 200)  # Keras's validation_split: the last 20% of the rows
        with torch.no_grad():
            p = model(torch.from_numpy(x[val]))
        loss = float(-torch.log(p[torch.arange(40), torch.from_numpy(y[val])].clamp(min=1e-7)).mean())
        self.assertAlmostEqual(loss, doc["val_loss"], delta=1e-5 * max(1.0, abs(loss)))

    def test_bad_bytes_are_named_as_held(self):
        with self.assertRaises(gpuvs.InputError) as caught:
            gpuvs.predict(b"not a protobuf", gpu="rtx-4090")
        self.assertEqual(str(caught.exception), "memory:model.onnx: not an ONNX model (the protobuf does not parse)")
        with self.assertRaises(gpuvs.InputError) as caught:
            gpuvs.predict("{ broken", gpu="rtx-4090")
        self.assertTrue(str(caught.exception).startswith("memory:model.json:1: malformed JSON"), str(caught.exception))
        with self.assertRaises(gpuvs.InputError):
            gpuvs.predict(gpuvs.Model(b"x", "no-extension"), gpu="rtx-4090")


class Tables(unittest.TestCase):
    def test_to_pandas_is_the_csv_table(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            self.skipTest("pandas is not installed (python3-pandas): to_pandas cannot be checked")
        doc = gpuvs.compare(["rtx-4090", "a100-80gb-sxm"], workload="llama3-8b")
        frame = gpuvs.to_pandas(doc, rows=["gpus"])
        r = subprocess.run([BINARY, "compare", "rtx-4090", "a100-80gb-sxm", "--workload", "llama3-8b", "-o", "csv"],
                           capture_output=True, text=True, timeout=60)
        import csv
        import io
        table = list(csv.reader(io.StringIO(r.stdout)))
        self.assertEqual(list(frame.columns), table[0])
        self.assertEqual(frame["gpu"].tolist(), [row[table[0].index("gpu")] for row in table[1:]])
        self.assertEqual(len(frame), 2)


if __name__ == "__main__":
    unittest.main()
