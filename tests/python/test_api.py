"""geopt's Python API as a user drives it: export with torch, optimize, compile, run."""
import json
import subprocess
import threading

import numpy as np
import pytest

import geopt
from conftest import rss_bytes


def test_encoder_round_trip_matches_torch(encoder, tmp_path):
    path, feeds, expected = encoder
    result = geopt.optimize(path)
    report = result.report
    assert report["kernels"]["after"] < report["kernels"]["before"]
    assert report["check"]["ok"] is True
    assert "LayerNormFusion" in report["rules"] and report["rules"]["LayerNormFusion"]["selected"] > 0
    import onnx
    model = result.model
    assert isinstance(model, onnx.ModelProto)
    assert any(n.domain == "ai.geopt" for n in model.graph.node)

    plan = geopt.compile(model)  # an onnx.ModelProto in
    assert plan.report["check"]["ok"] is True
    outputs = plan.run(feeds)
    assert list(outputs) == ["out"]
    np.testing.assert_allclose(outputs["out"], expected, atol=1e-4, rtol=1e-4)

    saved = tmp_path / "encoder.plan"
    assert plan.save(saved) == str(saved)
    again = geopt.Plan.load(saved).run(feeds)
    np.testing.assert_array_equal(again["out"], outputs["out"])


def test_an_optimize_result_compiles_as_it_is(cnn):
    path, feeds, expected = cnn
    plan = geopt.compile(geopt.optimize(path), check=False)
    np.testing.assert_allclose(plan.run(feeds)["out"], expected, atol=1e-4, rtol=1e-4)


def test_every_topological_sorting_mode_computes_the_model(cnn):
    path, feeds, expected = cnn
    for mode in (None, 0, 1, 2, 3):
        plan = geopt.compile(path, topo_sorting_mode=mode)
        np.testing.assert_allclose(plan.run(feeds)["out"], expected, atol=1e-4, rtol=1e-4)
    with pytest.raises(geopt.UsageError, match="topo_sorting_mode"):
        geopt.compile(path, topo_sorting_mode=7)


def test_keep_format_and_extraction_keep_the_model_computed(cnn):
    path, feeds, expected = cnn
    import onnx
    convs = [n.name for n in onnx.load(path).graph.node if n.op_type == "Conv"]
    for keep in (None, convs[:1], convs):
        for extraction in ("auto", "greedy", "exact"):
            plan = geopt.compile(path, keep_format=keep, extraction=extraction)
            np.testing.assert_allclose(plan.run(feeds)["out"], expected, atol=1e-4, rtol=1e-4)
    with pytest.raises(geopt.Error, match="no_such_node"):
        geopt.compile(path, keep_format=["no_such_node"])
    with pytest.raises(geopt.UsageError, match="extraction"):
        geopt.compile(path, extraction="ilp")


def test_cnn_from_bytes_runs_in_nc1hwc0_and_matches_torch(cnn):
    path, feeds, expected = cnn
    plan = geopt.compile(path.read_bytes(), soc_version="Ascend310P3", input_shape={"input": [1, 3, 32, 32]})
    assert plan.report["kernels"]["after"] <= 6
    outputs = plan.run(feeds)
    np.testing.assert_allclose(outputs["out"], expected, atol=1e-4, rtol=1e-4)
    dump = plan.dump()
    assert dump["soc_version"] == "Ascend310P3"
    assert any(k["op_type"] == "TransData" for k in dump["kernels"])
    profile = plan.profile()
    assert profile["latency_us"] > 0 and 0 < profile["cube_utilization"] <= 1


def test_python_and_cli_give_the_same_report(encoder, cli):
    path, _, _ = encoder
    by_cli = json.loads(subprocess.run([str(cli), "optimize", str(path), "--json"], check=True,
                                       capture_output=True, text=True).stdout)
    by_python = geopt.optimize(str(path)).report

    def without_times(report):  # the only fields that differ between two runs
        report = json.loads(json.dumps(report))
        report.pop("time_ms")
        for rule in report["rules"].values():
            rule.pop("search_ms")
            rule.pop("apply_ms")
        return report

    assert without_times(by_cli) == without_times(by_python)
    compiled_cli = json.loads(subprocess.run([str(cli), "compile", str(path), "--json"], check=True,
                                             capture_output=True, text=True).stdout)
    compiled_python = geopt.compile(str(path)).report
    for key in ("kernels", "latency_us", "fused", "memory", "streams", "profile"):
        assert compiled_cli[key] == compiled_python[key], key


def test_errors_are_geopt_errors_with_their_place(encoder, tmp_path):
    with pytest.raises(geopt.BadInput) as garbage:
        geopt.optimize(b"\x08\x07this is not a model")
    assert isinstance(garbage.value, geopt.Error)
    assert "not a valid ONNX model" in str(garbage.value)

    missing = tmp_path / "missing.onnx"
    with pytest.raises(geopt.BadInput) as e:
        geopt.compile(missing)
    assert str(missing) in str(e.value)

    rules = tmp_path / "bad.gerule"
    rules.write_text("rule Broken {\n  match x = Relu(\n}\n")
    with pytest.raises(geopt.BadInput) as e:
        geopt.optimize(encoder[0], rules=rules)
    assert (e.value.file, e.value.line, e.value.col) == (str(rules), 2, 9)
    assert "expected a pattern after `match`" in str(e.value)

    with pytest.raises(geopt.Error) as e:
        geopt.optimize(encoder[0], soc_version="Ascend999")
    assert "Ascend999" in str(e.value)

    with pytest.raises(geopt.UsageError):
        geopt.compile(encoder[0], dynamic_batch_size="1,2", input_shape_range="x:[1~2,16,64]")
    with pytest.raises(geopt.UsageError):
        geopt.optimize(12345)

    with pytest.raises(geopt.UsageError):
        geopt.optimize(encoder[0], precision_mode="fp13")
    blocker = tmp_path / "a file"
    blocker.write_text("")
    with pytest.raises(geopt.BadInput) as e:
        geopt.optimize(encoder[0], dump_graph=blocker / "stages")
    assert "--dump-graph" in str(e.value)

    plan = geopt.compile(encoder[0], check=False)
    with pytest.raises(geopt.UsageError):
        plan.run({"x": np.zeros((2, 16, 64), np.float32)}, threads=100000)
    with pytest.raises(geopt.BadInput) as e:
        plan.run({"x": np.zeros((2, 15, 64), np.float32)})
    assert "x" in str(e.value)
    with pytest.raises(geopt.BadInput):
        plan.run({})
    with pytest.raises(geopt.BadInput):
        plan.run({"x": np.zeros((2, 16, 64), np.float64)})


def test_feeds_need_not_be_contiguous(encoder):
    path, feeds, expected = encoder
    plan = geopt.compile(path, check=False)
    strided = np.asfortranarray(feeds["x"])
    assert not strided.flags["C_CONTIGUOUS"]
    np.testing.assert_allclose(plan.run({"x": strided})["out"], expected, atol=1e-4, rtol=1e-4)


def test_threads_agree_and_runs_may_overlap(cnn):
    path, feeds, expected = cnn
    plan = geopt.compile(path, check=False)
    one = plan.run(feeds, threads=1)["out"]
    two = plan.run(feeds, threads=2)["out"]
    np.testing.assert_allclose(one, two, atol=1e-5, rtol=1e-5)
    results = [None] * 4

    def worker(i):
        results[i] = plan.run(feeds, threads=1)["out"]

    workers = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    for r in results:
        np.testing.assert_allclose(r, expected, atol=1e-4, rtol=1e-4)


def test_a_hundred_runs_leak_nothing(encoder):
    path, feeds, _ = encoder
    plan = geopt.compile(path, check=False)
    for _ in range(20):  # warm: the allocator's pools and oneDNN's primitive cache fill
        plan.run(feeds)
    before = rss_bytes()
    for _ in range(100):
        outputs = plan.run(feeds)
    del outputs
    grown = rss_bytes() - before
    # One run's outputs are 8 KiB and its pool well under 1 MiB: a leak per run would show.
    assert grown < 4 << 20, grown


def test_outputs_own_their_bytes(cnn):
    path, feeds, _ = cnn
    plan = geopt.compile(path, check=False)
    first = plan.run(feeds)["out"]
    kept = first.copy()
    plan.run({"input": feeds["input"] * 2})
    np.testing.assert_array_equal(first, kept)


def test_explain_returns_sites_and_a_node_story(encoder):
    path, _, _ = encoder
    explanation = geopt.explain(path)
    assert explanation.sites, "no site reported"
    fused = [s for s in explanation.sites if s["rule"] == "LayerNormFusion" and s["matched"]]
    assert fused and all(s["location"].endswith(tuple("0123456789")) for s in fused)
    misses = [s for s in explanation.sites if not s["matched"]]
    assert misses and all(s["reason"] for s in misses)
    assert "fired (sites kept / matched)" in explanation.text
    node = fused[0]["node"]
    story = geopt.explain(path, node=node)
    assert story.report["node"] == node
    assert any(s["rule"] == "LayerNormFusion" and s["matched"] for s in story.sites)
    with pytest.raises(geopt.BadInput) as e:
        geopt.explain(path, node="no such node")
    assert "no such node" in str(e.value)


def test_rules_check_test_and_match(encoder, tmp_path):
    shipped = geopt.rules.check()
    assert shipped["rules"] > 100 and shipped["errors"] == []
    bad = tmp_path / "bad.gerule"
    bad.write_text("rule Broken {\n  match %y = Relu(%x\n}\n")
    with pytest.raises(geopt.BadInput) as e:
        geopt.rules.check(bad)
    assert e.value.file == str(bad) and e.value.line >= 2 and e.value.errors

    mine = tmp_path / "mine.gerule"
    mine.write_text(_DROPOUT_RULE)
    report = geopt.rules.test(mine)
    assert (report["passed"], report["failed"]) == (1, 1)
    failing = [t for t in report["tests"] if not t["passed"]]
    assert failing[0]["test"] == "a claim that is wrong" and failing[0]["failures"]

    sites = geopt.rules.match(encoder[0])
    assert len(sites["LayerNormFusion"]) == 4


_DROPOUT_RULE = """
rule MyDropoutIsIdentity {
  match %y = Dropout(%x)
  rewrite %y => %x
  test "drops a bare Dropout" {
    model \"\"\"<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,8] x) => (float[2,8] y) { d = Dropout(x) y = Relu(d) }\"\"\"
    expect count(Dropout) == 0
    expect fired(MyDropoutIsIdentity) == 1
    expect outputs_equal
  }
  test "a claim that is wrong" {
    model \"\"\"<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,8] x) => (float[2,8] y) { d = Dropout(x) y = Relu(d) }\"\"\"
    expect count(Dropout) == 1
  }
}
"""


def test_quantize_writes_a_qdq_model_that_compiles(cnn, tmp_path):
    path, feeds, expected = cnn
    calibration = tmp_path / "calibration"
    rng = np.random.default_rng(0)
    for i in range(4):
        (calibration / str(i)).mkdir(parents=True)
        np.save(calibration / str(i) / "input.npy", rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    stages = []
    result = geopt.quantize(path, calibration, progress=lambda stage, done, total: stages.append((stage, done)))
    assert stages
    assert result.report["quantized"] > 0
    # The first conv reads the 3-channel image: float by default, int8 when asked.
    assert result.report["quantized"] == len(result.report["layers"]) - 1
    every = geopt.quantize(path, calibration, quantize_image_convs=True)
    assert every.report["quantized"] == len(every.report["layers"])
    ops = {n.op_type for n in result.model.graph.node}
    assert {"QuantizeLinear", "DequantizeLinear"} <= ops
    with pytest.raises(geopt.UsageError):
        geopt.quantize(path, calibration, percentile=20)
    # The per-tensor method, a held-out sample and bias correction, through keywords.
    held = geopt.quantize(path, calibration, method="auto", holdout=0.25)
    assert held.report["calibration"]["samples"] == 3
    assert held.report["calibration"]["held_out_samples"] == 1
    assert 0 < held.report["accuracy"]["held_out"]["cosine"] <= 1
    assert {layer["method"] for layer in held.report["layers"]} <= {"minmax", "percentile", "entropy"}
    assert any("bias_shift" in layer for layer in held.report["layers"])
    plain = geopt.quantize(path, calibration, bias_correction=False)
    assert not any("bias_shift" in layer for layer in plain.report["layers"])
    with pytest.raises(geopt.UsageError):
        geopt.quantize(path, calibration, holdout=0.9)

    class Stop(Exception):
        pass

    def interrupt(stage, done, total):
        raise Stop(stage)

    with pytest.raises(Stop):  # the callback's own exception, not a geopt error
        geopt.quantize(path, calibration, progress=interrupt)

    plan = geopt.compile(result.model)
    out = plan.run(feeds)["out"]
    cosine = float(np.dot(out.ravel(), expected.ravel()) / np.linalg.norm(out) / np.linalg.norm(expected))
    assert cosine > 0.98, cosine


def test_tune_files_a_bank_that_compile_reads(cnn, tmp_path):
    path, feeds, expected = cnn
    stages = []
    tuning = geopt.tune(path, tmp_path / "bank", progress=lambda stage, done, total: stages.append(stage))
    assert {"compiling", "measuring op tactics", "checking the whole plan"} <= set(stages)
    assert tuning.bank_file == str(tmp_path / "bank" / "Ascend910B1" / "op_bank.json")
    assert tuning.report["job_type"] == 2 and tuning.report["ops"]
    plan = geopt.compile(path, op_bank_path=tmp_path / "bank")
    assert plan.report["tuning"]["op_bank"]["file"] == tuning.bank_file
    np.testing.assert_allclose(plan.run(feeds)["out"], expected, atol=1e-4, rtol=1e-4)
    simulated = geopt.tune(path, tmp_path / "models.json", job_type=1, tune_target="simulated")
    assert simulated.report["chosen"]["max_streams"] in (1, 2, 4)
    assert simulated.report["chosen"]["topo_sorting_mode"] in ("memory", "bfs", "dfs", "rdfs", "stable_rdfs")
    assert geopt.compile(path, mdl_bank_path=tmp_path / "models.json").report["tuning"]["model_bank"]["applied"]
    (tmp_path / "random.json").write_bytes(bytes(range(256)) * 8)
    with pytest.raises(geopt.BadInput, match="not a geopt knowledge bank"):
        geopt.compile(path, op_bank_path=tmp_path / "random.json")
    with pytest.raises(geopt.UsageError):
        geopt.tune(path, tmp_path / "bank", job_type=3)
