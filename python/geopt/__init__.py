"""geopt: optimize ONNX models for Ascend NPUs, compile them to execution plans, run them.

    import geopt
    result = geopt.optimize("bert.onnx", soc_version="Ascend310P3", input_shape={"input_ids": [1, 128]})
    result.model          # onnx.ModelProto
    result.report         # dict: what `geopt optimize --json` prints
    plan = geopt.compile(result.model, soc_version="Ascend310P3")
    outputs = plan.run({"input_ids": ids})   # dict of numpy arrays
    plan.save("bert.plan"); plan = geopt.Plan.load("bert.plan")

Options take ATC's names, as the CLI's flags do. Every failure geopt finds raises geopt.Error
(an argument of the wrong Python type raises TypeError, as Python's own functions do):
BadInput (a bad model, rule file, option or feed; UsageError for options that contradict
each other), CheckFailed (what geopt made differs from the model beyond the tolerance;
nothing was written), InternalError (a bug in geopt). Errors carry .file, .line, .col and
.node where the message names them. This module converts; the work is the C++ library's
(the same functions the CLI calls), with the GIL released.
"""

import json
import os

from . import _geopt

__version__ = _geopt.__version__
set_log_level = _geopt.set_log_level  # "warn" by default; "info" shows each stage
Error = _geopt.Error
BadInput = _geopt.BadInput
UsageError = _geopt.UsageError
InternalError = _geopt.InternalError
# Where an error names no place (or was raised here), its place reads None.
Error.file = Error.line = Error.col = Error.node = None


class CheckFailed(Error):
    """The numerical check failed: what geopt made differs from the model as given.

    .report holds the report (a dict) with the check's figures."""

    def __init__(self, message, report):
        super().__init__(message)
        self.report = report


def _source(model):
    """A path, serialized bytes, an onnx.ModelProto or an OptimizeResult, as the library takes models."""
    if isinstance(model, (str, os.PathLike)):
        return _geopt.ModelSource.file(os.fspath(model))
    if isinstance(model, (bytes, bytearray, memoryview)):
        return _geopt.ModelSource.serialized(bytes(model))
    if hasattr(model, "SerializeToString"):
        return _geopt.ModelSource.serialized(model.SerializeToString())
    if isinstance(model, OptimizeResult):  # geopt.compile(geopt.optimize(...)): no onnx round trip
        return _geopt.ModelSource.serialized(model.serialized())
    raise UsageError("model: expected a path, bytes or an onnx.ModelProto, not %s" % type(model).__name__)


def _strings(value, what):
    if value is None:
        return []
    if isinstance(value, (str, os.PathLike)):
        return [os.fspath(value)]
    try:
        return [os.fspath(v) for v in value]
    except TypeError:
        raise UsageError("%s: expected a string or a list of strings" % what) from None


def _input_shape(value):
    """ATC's text, or {name: dims} (None or -1 leaves a dim open)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return ";".join(
            "%s:%s" % (name, ",".join("-1" if d is None else str(int(d)) for d in dims))
            for name, dims in value.items())
    except (AttributeError, TypeError, ValueError):
        raise UsageError("input_shape: expected ATC's text or a dict of name to dims") from None


def _check_inputs(value):
    if value is None:
        return []
    if isinstance(value, dict):
        return ["%s=%s" % (name, os.fspath(path)) for name, path in value.items()]
    return _strings(value, "check_inputs")


def _fill_target(t, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel,
                 buffer_optimize):
    t.soc_version = os.fspath(soc_version)
    t.profile_set = _strings(profile_set, "profile_set")
    t.precision_mode = precision_mode
    t.modify_mixlist = os.fspath(modify_mixlist) if modify_mixlist else ""
    t.enable_small_channel = bool(enable_small_channel)
    t.buffer_optimize = str(buffer_optimize)


def _fill_rules(r, rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit):
    r.paths = _strings(rules, "rules")
    r.disable = _strings(disable, "disable")
    r.fusion_switch_file = os.fspath(fusion_switch_file) if fusion_switch_file else ""
    r.iter_limit = iter_limit
    r.node_limit = node_limit
    r.time_limit = time_limit


def _fill(o, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel, buffer_optimize,
          rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit, input_shape, check, check_atol,
          check_rtol, check_inputs, output, dump_graph):
    _fill_target(o.target, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel,
                 buffer_optimize)
    _fill_rules(o.rules, rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit)
    o.input_shape = _input_shape(input_shape)
    o.check.enabled = bool(check)
    o.check.atol = check_atol
    o.check.rtol = check_rtol
    o.check.inputs = _check_inputs(check_inputs)
    o.output = os.fspath(output) if output else ""
    o.dump_graph = os.fspath(dump_graph) if dump_graph else ""


class OptimizeResult:
    """An optimized model and its report."""

    def __init__(self, result):
        self._result = result
        self._model = None
        self.report = json.loads(result.report_json)
        self.report_text = result.report_text

    @property
    def model(self):
        """The optimized model as an onnx.ModelProto (parsed on first use)."""
        if self._model is None:
            import onnx
            self._model = onnx.ModelProto()
            self._model.ParseFromString(self.serialized())
        return self._model

    def serialized(self):
        """The optimized model's bytes (a serialized onnx.ModelProto)."""
        return self._result.model.serialized()

    def save(self, path):
        """Writes the optimized model (atomically) as .onnx."""
        self._result.model.save(os.fspath(path))


def optimize(model, *, soc_version="Ascend910B1", input_shape=None, rules=None, disable=None,
             precision_mode=None, check=True, profile_set=None, modify_mixlist=None, enable_small_channel=False,
            buffer_optimize="l2_optimize",
             fusion_switch_file=None, iter_limit=None, node_limit=None, time_limit=None, check_atol=None,
             check_rtol=None, check_inputs=None, check_size_cap_mb=512, output=None, export_compile_stat=None,
             dump_graph=None, keep_format=None, extraction="auto"):
    """Optimizes `model` (a path, bytes or onnx.ModelProto) as `geopt optimize` does.

    Returns an OptimizeResult (.model, .report, .save). Raises CheckFailed when the
    optimized model differs from the original beyond the tolerance."""
    o = _geopt.OptimizeOptions()
    _fill(o, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel, buffer_optimize,
          rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit, input_shape, check, check_atol,
          check_rtol, check_inputs, output, dump_graph)
    o.check.size_cap_mb = int(check_size_cap_mb)
    o.rules.keep_format = _strings(keep_format, "keep_format")
    o.rules.extraction = str(extraction)
    o.compile_stat = os.fspath(export_compile_stat) if export_compile_stat else ""
    r = _geopt.optimize(_source(model), o)
    if not r.check_ok:
        raise CheckFailed(r.error, json.loads(r.report_json))
    return OptimizeResult(r)


class Plan:
    """A compiled execution plan: save it, load it, run it on the host, inspect it."""

    def __init__(self, plan, report=None, report_text=None, warnings=()):
        self._plan = plan
        self.report = report  # compile's report (a dict); None for a loaded plan
        self.report_text = report_text
        self.warnings = list(warnings)

    @staticmethod
    def load(path):
        return Plan(_geopt.Plan.load(os.fspath(path)))

    def save(self, path, external_weights=False):
        """Writes the plan atomically; returns what was written."""
        return self._plan.save(os.fspath(path), external_weights)

    def run(self, feeds, threads=0, max_loop_trips=0):
        """Runs the plan on the plan executor; feeds and results are dicts of numpy arrays.

        C-contiguous arrays are read in place. bfloat16 travels as its uint16 bits.
        threads=0 uses every core."""
        if not isinstance(feeds, dict):
            raise UsageError("feeds: expected a dict of input name to numpy array")
        return self._plan.run(feeds, int(threads), int(max_loop_trips))

    @property
    def inputs(self):
        """[(name, dtype, shape)] of the plan's inputs (a plan of gears: its first gear's)."""
        return self._plan.inputs()

    @property
    def outputs(self):
        return self._plan.outputs()

    def dump(self):
        """The plan as a dict (`geopt plan dump --json`): kernels, streams, events, memory."""
        return json.loads(self._plan.dump_json())

    def profile(self, gear=0):
        """The simulated device profile as a dict (`geopt profile --json`)."""
        return json.loads(self._plan.profile_json(int(gear)))


def compile(model, *, soc_version="Ascend910B1", input_shape=None, rules=None, disable=None,
            precision_mode=None, check=True, optimize=True, profile_set=None, modify_mixlist=None,
            enable_small_channel=False, buffer_optimize="l2_optimize", fusion_switch_file=None, iter_limit=None,
            node_limit=None, time_limit=None, check_atol=None, check_rtol=None, check_inputs=None,
            disable_reuse_memory=False, op_no_reuse_mem=None, enable_single_stream=False, max_streams=4,
            topo_sorting_mode=None, dynamic_batch_size=None, dynamic_image_size=None, dynamic_dims=None,
            input_shape_range=None, output=None, external_weights=False, dump_graph=None, op_bank_path=None,
            mdl_bank_path=None, keep_format=None, extraction="auto"):
    """Compiles `model` (a path, bytes or onnx.ModelProto) to a Plan as `geopt compile` does.

    op_bank_path, mdl_bank_path: knowledge banks geopt.tune wrote (docs/TUNING.md).
    topo_sorting_mode: ATC's --topo_sorting_mode, 0 to 3 (None: geopt's memory-aware order).
    keep_format: node names the layout rules leave in the model's format (a region kept out
    of NC1HWC0); extraction: "auto", "greedy" or "exact".
    Raises CheckFailed when the plan's outputs differ from the model's beyond the tolerance."""
    o = _compile_options(
        soc_version=soc_version, input_shape=input_shape, rules=rules, disable=disable, precision_mode=precision_mode,
        check=check, optimize=optimize, profile_set=profile_set, modify_mixlist=modify_mixlist,
        enable_small_channel=enable_small_channel, buffer_optimize=buffer_optimize,
        fusion_switch_file=fusion_switch_file, iter_limit=iter_limit, node_limit=node_limit, time_limit=time_limit,
        check_atol=check_atol, check_rtol=check_rtol, check_inputs=check_inputs,
        disable_reuse_memory=disable_reuse_memory, op_no_reuse_mem=op_no_reuse_mem,
        enable_single_stream=enable_single_stream, max_streams=max_streams, topo_sorting_mode=topo_sorting_mode,
        dynamic_batch_size=dynamic_batch_size, dynamic_image_size=dynamic_image_size, dynamic_dims=dynamic_dims, input_shape_range=input_shape_range,
        output=output, external_weights=external_weights, dump_graph=dump_graph, op_bank_path=op_bank_path,
        mdl_bank_path=mdl_bank_path, keep_format=keep_format, extraction=extraction)
    r = _geopt.compile(_source(model), o)
    report = json.loads(r.report_json)
    if not r.check_ok:
        raise CheckFailed(r.error, report)
    return Plan(r.plan, report, r.report_text, r.warnings)


def _compile_options(*, soc_version="Ascend910B1", input_shape=None, rules=None, disable=None, precision_mode=None,
                     check=True, optimize=True, profile_set=None, modify_mixlist=None, enable_small_channel=False,
                     buffer_optimize="l2_optimize", fusion_switch_file=None, iter_limit=None, node_limit=None,
                     time_limit=None, check_atol=None, check_rtol=None, check_inputs=None,
                     disable_reuse_memory=False, op_no_reuse_mem=None, enable_single_stream=False, max_streams=4,
                     topo_sorting_mode=None, dynamic_batch_size=None, dynamic_image_size=None, dynamic_dims=None, input_shape_range=None,
                     output=None, external_weights=False, dump_graph=None, op_bank_path=None, mdl_bank_path=None,
                     keep_format=None, extraction="auto"):
    """compile's keywords as the library's CompileOptions (tune compiles with them too)."""
    o = _geopt.CompileOptions()
    _fill(o, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel, buffer_optimize,
          rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit, input_shape, check, check_atol,
          check_rtol, check_inputs, output, dump_graph)
    o.optimize = bool(optimize)
    o.disable_reuse_memory = bool(disable_reuse_memory)
    o.op_no_reuse_mem = _strings(op_no_reuse_mem, "op_no_reuse_mem")
    o.enable_single_stream = bool(enable_single_stream)
    o.max_streams = int(max_streams)
    o.topo_sorting_mode = "" if topo_sorting_mode is None else str(topo_sorting_mode)
    o.external_weights = bool(external_weights)
    o.dynamic_batch_size = dynamic_batch_size or ""
    o.dynamic_image_size = dynamic_image_size or ""
    o.dynamic_dims = dynamic_dims or ""
    o.input_shape_range = input_shape_range or ""
    o.op_bank_path = os.fspath(op_bank_path) if op_bank_path else ""
    o.mdl_bank_path = os.fspath(mdl_bank_path) if mdl_bank_path else ""
    o.rules.keep_format = _strings(keep_format, "keep_format")
    o.rules.extraction = str(extraction)
    return o


class Tuning:
    """What geopt.tune measured and filed: .bank_file, .report (the dict `geopt tune --json`
    prints), .text (what `geopt tune` prints)."""

    def __init__(self, result):
        self.bank_file = result.bank_file
        self.report = json.loads(result.report_json)
        self.text = result.report_text

    def __str__(self):
        return self.text


def tune(model, output, *, job_type=2, tune_ops_file=None, reload=False, time_budget=0.0, tune_target="host",
         seed=0, tune_threads=False, progress=None, soc_version="Ascend910B1", input_shape=None, rules=None, disable=None,
         precision_mode=None, check=True, optimize=True, profile_set=None, modify_mixlist=None,
         enable_small_channel=False, buffer_optimize="l2_optimize", fusion_switch_file=None, iter_limit=None,
         node_limit=None, time_limit=None, max_streams=4, mdl_bank_path=None, keep_format=None, extraction="auto"):
    """Auto-tuning as `geopt tune` does it (docs/TUNING.md): job_type 2 measures each op
    signature's host tactics, job_type 1 the model's strategy settings; both file what they
    keep in the knowledge bank `output` (a folder or a .json file), which geopt.compile reads
    with op_bank_path= / mdl_bank_path=. progress: called as progress(stage, done, total).
    Returns a Tuning."""
    o = _geopt.TuneOptions()
    o.compile = _compile_options(
        soc_version=soc_version, input_shape=input_shape, rules=rules, disable=disable, precision_mode=precision_mode,
        check=check, optimize=optimize, profile_set=profile_set, modify_mixlist=modify_mixlist,
        enable_small_channel=enable_small_channel, buffer_optimize=buffer_optimize,
        fusion_switch_file=fusion_switch_file, iter_limit=iter_limit, node_limit=node_limit, time_limit=time_limit,
        max_streams=max_streams, mdl_bank_path=mdl_bank_path, keep_format=keep_format, extraction=extraction)
    o.job_type = int(job_type)
    o.bank_path = os.fspath(output)
    o.tune_ops_file = os.fspath(tune_ops_file) if tune_ops_file else ""
    o.reload = bool(reload)
    o.time_budget_s = float(time_budget)
    o.tune_target = tune_target
    o.seed = int(seed)
    o.tune_threads = bool(tune_threads)
    return Tuning(_geopt.tune(_source(model), o, progress))


class Explanation:
    """Why rules did or did not fire on a model.

    .sites: one dict per site a rule considered (rule, location, node, matched, reason,
    and scope inside a control-flow body); with node=, the rules that considered that node.
    .report: the whole report (`geopt explain --json`); .text: what `geopt explain` prints."""

    def __init__(self, result):
        self.report = json.loads(result.report_json)
        self.text = result.report_text
        if "rules" in self.report:
            self.sites = [dict(site, rule=r["rule"], location=r["location"])
                          for r in self.report["rules"] for site in r["sites"]]
        else:
            self.sites = list(self.report.get("considered", []))

    def __str__(self):
        return self.text


def explain(model, *, rule=None, node=None, anywhere=False, all=False, verbose=False, soc_version="Ascend910B1",
            input_shape=None, input_shape_range=None, rules=None, disable=None, fusion_switch_file=None,
            precision_mode=None, profile_set=None, modify_mixlist=None, enable_small_channel=False,
            buffer_optimize="l2_optimize",
            iter_limit=None, node_limit=None, time_limit=None):
    """Why rules did or did not fire on `model`, and why a match was or was not kept.

    rule= limits it to one rule, node= tells one node's story. Returns an Explanation."""
    o = _geopt.ExplainOptions()
    _fill_target(o.target, soc_version, profile_set, precision_mode, modify_mixlist, enable_small_channel,
                 buffer_optimize)
    _fill_rules(o.rules, rules, disable, fusion_switch_file, iter_limit, node_limit, time_limit)
    o.input_shape = _input_shape(input_shape)
    o.input_shape_range = input_shape_range or ""
    o.rule = rule or ""
    o.node = node or ""
    o.anywhere = bool(anywhere)
    o.all = bool(all)
    o.verbose = bool(verbose)
    return Explanation(_geopt.explain(_source(model), o))


def quantize(model, calibration, *, method="percentile", activation_type="uint8", percentile=99.999,
             bias_correction=True, holdout=0.0, skip_layers=None, quantize_image_convs=False, sensitivity=False,
             accuracy_target=None, input_shape=None, output=None, progress=None):
    """INT8 post-training quantization of `model` into ONNX's QDQ form, as `geopt quantize` does.

    calibration: a folder with one folder per sample holding NAME.npy per input.
    method: percentile, minmax, entropy, or auto (per tensor, the least quantization error).
    holdout: the share of samples that set nothing and judge (sensitivity, accuracy_target).
    quantize_image_convs: also quantize a conv that reads a model input of at most 4 channels
    (kept in float by default).
    progress: called as progress(stage, done, total). Returns an OptimizeResult-like
    object (.model, .report, .save)."""
    o = _geopt.QuantizeOptions()
    o.calibration = os.fspath(calibration)
    o.method = method
    o.activation_type = activation_type
    o.percentile = float(percentile)
    o.bias_correction = bool(bias_correction)
    o.holdout = float(holdout)
    o.skip_layers = _strings(skip_layers, "skip_layers")
    o.quantize_image_convs = bool(quantize_image_convs)
    o.sensitivity = bool(sensitivity)
    o.accuracy_target = accuracy_target
    o.input_shape = _input_shape(input_shape)
    o.output = os.fspath(output) if output else ""
    return OptimizeResult(_geopt.quantize(_source(model), o, progress))


from . import rules  # noqa: E402  (geopt.rules.check/test/match)
