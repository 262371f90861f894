# SPDX-License-Identifier: Apache-2.0
"""Every JSON document gpuvs prints is described by a JSON Schema in data/schemas, and holds to it.

Run by ctest with Debian's python3 and its python3-jsonschema (Draft 2020-12), GPUVS_BINARY the built gpuvs and
GPUVS_SCHEMAS the schema folder. Each case runs the binary as a user would and validates what it prints; the
schemas are strict (every object closed), so a field added, renamed or retyped without its schema fails here. The
cases reach the optional parts (parallel plans, fine-tuning, calibration, measurements, load curves, runs stored in
a history); every schema must be used by a case, and every command that prints JSON must have one.
"""
import copy
import json
import os
import pathlib
import re
import shutil
import subprocess
import tempfile
import unittest

import jsonschema

import json_schemas

BINARY = os.environ["GPUVS_BINARY"]
SCHEMAS = pathlib.Path(os.environ["GPUVS_SCHEMAS"]).resolve()
DATA = pathlib.Path(__file__).resolve().parents[2] / "data"
TESTDATA = pathlib.Path(__file__).resolve().parents[1] / "data"
EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"

# A gpuvs bench --save record of an H200 (as test_cli's calibration test writes it): predict --calibration reads it.
BENCH_RECORD = {"schema_version": 2, "quick": False, "results": [
    {"key": "cuda.gemm.bf16", "unit": "TFLOP/s", "status": "ok", "median": 600.0, "device": "cuda:0 NVIDIA H200 (h200-sxm)"},
    {"key": "cuda.mem.copy", "unit": "GB/s", "status": "ok", "median": 4200.0, "device": "cuda:0 NVIDIA H200 (h200-sxm)"}]}
DECODE_60 = "gpu=rtx-4090;workload=llama3-8b;mode=decode;precision=fp16;value=60 tokens/s"
TRAIN_700 = "gpu=rtx-3090;workload=resnet50;mode=train;precision=amp-fp16;batch=128;value=700 images/s"


def errors(name, doc):
    return json_schemas.errors(SCHEMAS, name, doc)


class JsonOutputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        t = pathlib.Path(cls.tmp.name)
        cls.env = dict(os.environ, GPUVS_CONFIG="none", GPUVS_DB=str(t / "history.db"), NO_COLOR="1")
        (t / "bench.json").write_text(json.dumps(BENCH_RECORD))
        # Leave-one-source-out and calibrate-one refit the constants once per source: three sources (training with
        # cross-GPU groups, serving, microbenchmarks) give every part of the document in seconds, not minutes.
        subset = t / "validation-subset"
        subset.mkdir()
        for name in ("lambda-pytorch-2023.csv", "llamacpp-4090.csv", "micro.csv"):
            shutil.copy(DATA / "validation" / name, subset / name)
        cls.run_ok("calibrate", DECODE_60, "--save", str(t / "stack.toml"))
        # The history: two evaluate runs (the second a decoder with a measurement) and a bench run.
        cls.run_ok("evaluate", "--epochs", "1", "--rows", "1000", "--no-report")
        cls.run_ok("evaluate", "--epochs", "1", "--rows", "1000", "--no-report", "--workload", "llama3-8b", "--measured", DECODE_60)
        cls.run_ok("bench", "--quick", "--only", "cpu.stream.copy,cuda.mem.read", "--store")
        # Run 4: a serving scenario, whose predictions are served decoders (requests in flight, engine, lengths).
        cls.run_ok("evaluate", "--epochs", "1", "--rows", "1000", "--no-report", "--scenario", str(EXAMPLES / "serving.toml"))
        cls.t = t
        cls.documents = {}  # (schema, args) -> document, filled by test_every_case

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    @classmethod
    def run_ok(cls, *args):
        r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=300, env=cls.env)
        if r.returncode != 0:
            raise AssertionError(f"gpuvs {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r.stdout

    def cases(self):
        t = self.t
        v = str(DATA / "validation")
        return [
            ("predict.schema.json", ["predict", "--workload", "seed-mlp", "--gpu", "rtx-4090", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "resnet50", "--gpu", "a100-80gb-sxm", "--mode", "infer", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "bert-base", "--gpu", "h100-sxm", "--gpus", "8", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "bert-large", "--gpu", "a100-80gb-sxm", "--options",
                                     "lengths=wikipedia-512;bin_size=64;global_batch=4096", "--batch", "16", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-70b", "--gpu", "h100-sxm", "--gpus", "64", "--options", "tp=8;pp=2", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "rtx-4090", "--options", "finetune=qlora", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "resnet50", "--gpu", "h200", "--calibration", str(t / "bench.json"), "--json"]),
            ("predict.schema.json", ["predict", "--workload", "resnet50", "--gpu", "a100-80gb-sxm", "--measured", TRAIN_700, "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "h100-sxm", "--mode", "decode", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "h100-sxm", "--mode", "prefill", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "l40s", "--mode", "infer", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-70b", "--gpu", "rtx-4090", "--mode", "decode", "--options",
                                     "framework=llama.cpp", "--precision", "q4_k_m", "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "a100-80gb-sxm", "--mode", "decode", "--measured", DECODE_60, "--json"]),
            ("predict.schema.json", ["predict", "--workload", "llama3-8b", "--gpu", "a100-80gb-sxm", "--mode", "decode", "--stack", str(t / "stack.toml"), "--json"]),
            ("compare.schema.json", ["compare", "--json"]),
            ("compare.schema.json", ["compare", "rtx-4090", "h100-sxm", "l40s", "--workload", "llama3-70b", "--json"]),
            ("compare.schema.json", ["compare", "rtx-4090", "a100-80gb-sxm", "--workload", "resnet50", "--measured", TRAIN_700, "--json"]),
            ("compare.schema.json", ["compare", "rtx-4090", "h100-sxm", "--workload", "llama3-8b", "--mode", "decode", "--json"]),
            ("compare.schema.json", ["compare", "rtx-3090", "h100-sxm", "--workload", "llama3-8b", "--mode", "infer", "--precision", "fp8", "--json"]),
            ("compare.schema.json", ["compare", "rtx-4090", "a100-80gb-sxm", "--workload", "llama3-8b", "--mode", "decode", "--measured", DECODE_60, "--json"]),
            ("advise.schema.json", ["advise", "--json"]),
            ("advise.schema.json", ["advise", "--task", "infer", "--workload", "llama3-8b", "--sla-p99-ms", "100", "--json"]),
            ("advise.schema.json", ["advise", "--task", "finetune", "--finetune", "qlora", "--workload", "llama3-70b", "--json"]),
            ("advise.schema.json", ["advise", "--task", "infer", "--workload", "resnet50", "--tenants", "8", "--json"]),
            ("advise.schema.json", ["advise", "--task", "infer", "--workload", "llama3-8b", "--measured", DECODE_60, "--json"]),
            ("advise.schema.json", ["advise", "--scenario", str(EXAMPLES / "serving.toml"), "--engine", "trt-llm", "--json"]),
            ("advise.schema.json", ["advise", "--task", "infer", "--workload", "llama3-8b", "--precision", "int4-awq", "--json"]),
            ("catalog.schema.json", ["catalog", "--json"]),
            ("catalog-show.schema.json", ["catalog", "show", "h100-sxm", "--json"]),
            ("catalog-show.schema.json", ["catalog", "show", "rtx-4090", "--json"]),
            ("catalog-show.schema.json", ["catalog", "show", "mi300x", "--json"]),
            ("devices.schema.json", ["devices", "--json"]),
            ("graph.schema.json", ["graph", "seed-mlp", "--json"]),
            ("graph.schema.json", ["graph", "bert-base", "--batch", "8", "--ops", "--json"]),
            ("graph.schema.json", ["graph", "gpt", "--options", "layers=2;hidden=256;heads=4", "--mode", "eval", "--json"]),
            ("graph.schema.json", ["graph", str(TESTDATA / "keras" / "seed_keras3.json"), "--json"]),
            ("workloads.schema.json", ["workloads", "--json"]),
            ("validate.schema.json", ["validate", "--data", v, "--json"]),
            ("validate.schema.json", ["validate", "--data", str(t / "validation-subset"), "--held-out", "--json"]),
            ("validate.schema.json", ["validate", "--data", str(t / "validation-subset"), "--calibrate-one", "--json"]),
            ("validate.schema.json", ["validate", "--measured", DECODE_60, "--measured", TRAIN_700, "--json"]),
            ("calibrate.schema.json", ["calibrate", DECODE_60, "--json"]),
            ("calibrate.schema.json", ["calibrate", TRAIN_700, "--save", str(t / "train-stack.toml"), "--json"]),
            ("train.schema.json", ["train", "seed-mlp", "--epochs", "2", "--rows", "1000", "--json"]),
            ("train.schema.json", ["train", "seed-mlp", "--epochs", "1", "--rows", "1000", "--validation-split", "0", "--profile", "--json"]),
            ("bench.schema.json", ["bench", "--quick", "--only", "cpu.stream.copy,cpu.gemm.sgemm,cuda.gemm.fp16", "--json"]),
            ("evaluate.schema.json", ["evaluate", "--epochs", "1", "--rows", "1000", "--report", str(t / "report.html"), "--json"]),
            ("history.schema.json", ["history", "--json"]),
            ("diff.schema.json", ["diff", "1", "2", "--json"]),
            ("diff.schema.json", ["diff", "1", "3", "--json"]),
            ("run.schema.json", ["report", "-o", "json", "--run", "1"]),
            ("run.schema.json", ["report", "-o", "json", "--run", "2"]),
            ("run.schema.json", ["report", "-o", "json", "--run", "3"]),
            ("run.schema.json", ["report", "-o", "json", "--run", "4"]),
        ]

    def document(self, schema, args):
        key = (schema, tuple(args))
        if key not in self.documents:
            self.documents[key] = json.loads(self.run_ok(*args))
        return self.documents[key]

    def test_every_case_holds_to_its_schema(self):
        for schema, args in self.cases():
            with self.subTest(command=" ".join(args)):
                self.assertEqual(errors(schema, self.document(schema, args)), [])

    def test_the_schemas_are_strict(self):
        """A document without its version, with a field added, or with its version retyped is refused."""
        for schema, args in self.cases():
            with self.subTest(command=" ".join(args)):
                doc = self.document(schema, args)
                added = copy.deepcopy(doc)
                added["an_undocumented_field"] = 1
                self.assertNotEqual(errors(schema, added), [])
                removed = copy.deepcopy(doc)
                del removed["schema_version"]
                self.assertNotEqual(errors(schema, removed), [])
                retyped = copy.deepcopy(doc)
                retyped["schema_version"] = str(doc["schema_version"])
                self.assertNotEqual(errors(schema, retyped), [])
                # A field inside: the first object-valued field with a field added.
                nested = copy.deepcopy(doc)
                inner = next((v for v in nested.values() if isinstance(v, dict) and v), None)
                if inner is not None:
                    inner["an_undocumented_field"] = 1
                    self.assertNotEqual(errors(schema, nested), [])

    def test_every_schema_is_used_and_every_json_command_has_one(self):
        used = {schema for schema, _ in self.cases()}
        files = {p.name for p in SCHEMAS.glob("*.schema.json")} - {"common.schema.json"}
        self.assertEqual(files - used, set(), "schemas no case checks")
        self.assertEqual(used - files, set(), "cases naming missing schemas")
        top = self.run_ok("--help")
        commands = re.findall(r"^  ([a-z]+) ", top.split("Subcommands:")[1], re.M)
        self.assertIn("predict", commands)
        covered = {args[0] for _, args in self.cases()}
        for c in commands:
            help_text = self.run_ok(c, "--help")
            prints_json = "--json" in help_text or re.search(r"-o,--output TEXT[^\n]*\n?[^\n]*json", help_text) is not None
            with self.subTest(command=c):
                self.assertEqual(c in covered, prints_json, f"{c}: prints JSON={prints_json}, has a schema case={c in covered}")

    def test_every_schema_is_valid_and_every_reference_resolves(self):
        for path in sorted(SCHEMAS.glob("*.schema.json")):
            with self.subTest(schema=path.name):
                schema = json.loads(path.read_text())
                jsonschema.Draft202012Validator.check_schema(schema)
                self.assertEqual(schema.get("$schema"), "https://json-schema.org/draft/2020-12/schema")
                refs = []

                def walk(node):
                    if isinstance(node, dict):
                        if isinstance(node.get("$ref"), str):
                            refs.append(node["$ref"])
                        for value in node.values():
                            walk(value)
                    elif isinstance(node, list):
                        for value in node:
                            walk(value)

                walk(schema)
                for ref in refs:
                    self.assertIsInstance(json_schemas.resolve(SCHEMAS, path.name, ref), dict, ref)


if __name__ == "__main__":
    unittest.main()
