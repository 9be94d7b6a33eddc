// _geopt: the C++ API (geopt/geopt.h) as Python sees it. Converts and calls, nothing
// more: options structs, errors with their place, numpy arrays in and out without
// copies where the dtype and layout allow. The GIL is released while geopt works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <geopt/geopt.h>

#include <map>
#include <string>
#include <vector>

namespace py = pybind11;
namespace api = geopt::api;

namespace {

// Text geopt wrote (a path in Latin-1 may not be UTF-8): undecodable bytes escaped.
py::str text(const std::string& s) {
  PyObject* o = PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "backslashreplace");
  if (!o) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(o);
}

// A Python callback raised: its exception is set in the interpreter, and this (no
// std::exception, so geopt passes it through untouched) unwinds geopt's work.
struct PythonRaised {};

struct ErrorTypes {
  py::object error, bad_input, usage, internal;
};
ErrorTypes& error_types() {
  static ErrorTypes* types = new ErrorTypes();  // never destroyed: lives as long as the interpreter
  return *types;
}

// Raises `type` with the message, carrying the place as attributes (None where unknown).
void raise(const py::object& type, const api::Error& e) {
  py::object exc = type(text(e.what()));
  exc.attr("file") = e.file.empty() ? py::object(py::none()) : py::object(text(e.file));
  exc.attr("line") = e.line ? py::object(py::int_(e.line)) : py::object(py::none());
  exc.attr("col") = e.col ? py::object(py::int_(e.col)) : py::object(py::none());
  exc.attr("node") = e.node.empty() ? py::object(py::none()) : py::object(text(e.node));
  PyErr_SetObject(type.ptr(), exc.ptr());
}

// numpy's dtype for a geopt dtype name; bfloat16, which numpy lacks, as its bits (uint16).
py::dtype numpy_dtype(const std::string& name) {
  return py::dtype(name == "bfloat16" ? std::string("uint16") : name == "bool" ? std::string("bool") : name);
}

// A feed over a C-contiguous array's bytes (run_plan copies only arrays that are not). An
// input the plan declares bfloat16 takes a uint16 array of its bits.
api::Tensor feed(const py::array& array, const std::string& declared) {
  api::Tensor t;
  std::string dtype = py::str(array.dtype()).cast<std::string>();
  if (declared == "bfloat16" && dtype == "uint16") dtype = "bfloat16";
  t.dtype = dtype;
  t.shape.assign(array.shape(), array.shape() + array.ndim());
  t.data = array.data();
  t.nbytes = static_cast<size_t>(array.nbytes());
  return t;  // no owner: the caller keeps `array` alive for the run
}

// An output as a numpy array over geopt's bytes, which the array keeps alive.
py::array output(const api::Tensor& t) {
  auto* owner = new std::shared_ptr<const void>(t.owner);
  py::capsule keep(owner, [](void* p) { delete static_cast<std::shared_ptr<const void>*>(p); });
  const py::dtype dtype = numpy_dtype(t.dtype);
  std::vector<py::ssize_t> strides(t.shape.size());
  py::ssize_t stride = dtype.itemsize();
  for (size_t i = t.shape.size(); i-- > 0;) {
    strides[i] = stride;
    stride *= static_cast<py::ssize_t>(std::max<int64_t>(t.shape[i], 1));
  }
  return py::array(dtype, std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()), strides, t.data, keep);
}

py::dict run_plan(const api::Plan& plan, const py::dict& feeds, int threads, uint64_t max_loop_trips) {
  std::map<std::string, std::string> declared;
  for (const auto& b : plan.inputs()) declared[b.name] = b.dtype;
  std::vector<py::array> held;  // the arrays whose bytes the feeds read
  held.reserve(feeds.size());
  std::map<std::string, api::Tensor> tensors;
  for (const auto& [key, value] : feeds) {
    const std::string name = py::str(key).cast<std::string>();
    held.push_back(py::array::ensure(value, py::array::c_style));
    if (!held.back())
      throw api::BadInput("input '" + name + "': not convertible to a C-contiguous numpy array");
    tensors[name] = feed(held.back(), declared[name]);
  }
  std::map<std::string, api::Tensor> outs;
  {
    py::gil_scoped_release released;
    outs = plan.run(tensors, {.threads = threads, .max_loop_trips = max_loop_trips});
  }
  py::dict result;
  for (const auto& [name, t] : outs) result[text(name)] = output(t);
  return result;
}

// geopt.Error and its kinds, raised with their place as attributes.
void bind_errors(py::module_& m) {
  ErrorTypes& types = error_types();
  types.error = py::exception<api::Error>(m, "Error");
  types.bad_input = py::exception<api::BadInput>(m, "BadInput", types.error.ptr());
  types.usage = py::exception<api::UsageError>(m, "UsageError", types.bad_input.ptr());
  types.internal = py::exception<api::InternalError>(m, "InternalError", types.error.ptr());
  for (py::object* type : {&types.error, &types.bad_input, &types.usage, &types.internal})
    type->attr("__module__") = "geopt";  // as users name them: geopt.BadInput
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const api::UsageError& e) {
      raise(error_types().usage, e);
    } catch (const api::BadInput& e) {
      raise(error_types().bad_input, e);
    } catch (const api::InternalError& e) {
      raise(error_types().internal, e);
    } catch (const api::Error& e) {
      raise(error_types().error, e);
    }
  });
}

// The option structs, field for field (geopt/__init__.py fills them from keywords).
void bind_options(py::module_& m) {
  py::class_<api::ModelSource>(m, "ModelSource")
      .def_static("file", &api::ModelSource::file)
      .def_static("serialized", [](py::bytes b) { return api::ModelSource::serialized(std::string(b)); });

  py::class_<api::TargetOptions>(m, "TargetOptions")
      .def(py::init<>())
      .def_readwrite("soc_version", &api::TargetOptions::soc_version)
      .def_readwrite("profile_set", &api::TargetOptions::profile_set)
      .def_readwrite("precision_mode", &api::TargetOptions::precision_mode)
      .def_readwrite("modify_mixlist", &api::TargetOptions::modify_mixlist)
      .def_readwrite("enable_small_channel", &api::TargetOptions::enable_small_channel)
      .def_readwrite("buffer_optimize", &api::TargetOptions::buffer_optimize);
  py::class_<api::RuleOptions>(m, "RuleOptions")
      .def(py::init<>())
      .def_readwrite("paths", &api::RuleOptions::paths)
      .def_readwrite("disable", &api::RuleOptions::disable)
      .def_readwrite("fusion_switch_file", &api::RuleOptions::fusion_switch_file)
      .def_readwrite("iter_limit", &api::RuleOptions::iter_limit)
      .def_readwrite("node_limit", &api::RuleOptions::node_limit)
      .def_readwrite("time_limit", &api::RuleOptions::time_limit)
      .def_readwrite("keep_format", &api::RuleOptions::keep_format)
      .def_readwrite("extraction", &api::RuleOptions::extraction);
  py::class_<api::CheckOptions>(m, "CheckOptions")
      .def(py::init<>())
      .def_readwrite("enabled", &api::CheckOptions::enabled)
      .def_readwrite("atol", &api::CheckOptions::atol)
      .def_readwrite("rtol", &api::CheckOptions::rtol)
      .def_readwrite("inputs", &api::CheckOptions::inputs)
      .def_readwrite("size_cap_mb", &api::CheckOptions::size_cap_mb);
  py::class_<api::OptimizeOptions>(m, "OptimizeOptions")
      .def(py::init<>())
      .def_readwrite("target", &api::OptimizeOptions::target)
      .def_readwrite("rules", &api::OptimizeOptions::rules)
      .def_readwrite("input_shape", &api::OptimizeOptions::input_shape)
      .def_readwrite("check", &api::OptimizeOptions::check)
      .def_readwrite("output", &api::OptimizeOptions::output)
      .def_readwrite("compile_stat", &api::OptimizeOptions::compile_stat)
      .def_readwrite("dump_graph", &api::OptimizeOptions::dump_graph);
  py::class_<api::CompileOptions, api::OptimizeOptions>(m, "CompileOptions")
      .def(py::init<>())
      .def_readwrite("optimize", &api::CompileOptions::optimize)
      .def_readwrite("disable_reuse_memory", &api::CompileOptions::disable_reuse_memory)
      .def_readwrite("op_no_reuse_mem", &api::CompileOptions::op_no_reuse_mem)
      .def_readwrite("enable_single_stream", &api::CompileOptions::enable_single_stream)
      .def_readwrite("max_streams", &api::CompileOptions::max_streams)
      .def_readwrite("topo_sorting_mode", &api::CompileOptions::topo_sorting_mode)
      .def_readwrite("external_weights", &api::CompileOptions::external_weights)
      .def_readwrite("dynamic_batch_size", &api::CompileOptions::dynamic_batch_size)
      .def_readwrite("dynamic_image_size", &api::CompileOptions::dynamic_image_size)
      .def_readwrite("dynamic_dims", &api::CompileOptions::dynamic_dims)
      .def_readwrite("input_shape_range", &api::CompileOptions::input_shape_range)
      .def_readwrite("op_bank_path", &api::CompileOptions::op_bank_path)
      .def_readwrite("mdl_bank_path", &api::CompileOptions::mdl_bank_path);
  py::class_<api::TuneOptions>(m, "TuneOptions")
      .def(py::init<>())
      .def_readwrite("compile", &api::TuneOptions::compile)
      .def_readwrite("job_type", &api::TuneOptions::job_type)
      .def_readwrite("bank_path", &api::TuneOptions::bank_path)
      .def_readwrite("tune_ops_file", &api::TuneOptions::tune_ops_file)
      .def_readwrite("reload", &api::TuneOptions::reload)
      .def_readwrite("time_budget_s", &api::TuneOptions::time_budget_s)
      .def_readwrite("tune_target", &api::TuneOptions::tune_target)
      .def_readwrite("seed", &api::TuneOptions::seed)
      .def_readwrite("tune_threads", &api::TuneOptions::tune_threads);
  py::class_<api::ExplainOptions>(m, "ExplainOptions")
      .def(py::init<>())
      .def_readwrite("target", &api::ExplainOptions::target)
      .def_readwrite("rules", &api::ExplainOptions::rules)
      .def_readwrite("input_shape", &api::ExplainOptions::input_shape)
      .def_readwrite("input_shape_range", &api::ExplainOptions::input_shape_range)
      .def_readwrite("rule", &api::ExplainOptions::rule)
      .def_readwrite("node", &api::ExplainOptions::node)
      .def_readwrite("anywhere", &api::ExplainOptions::anywhere)
      .def_readwrite("all", &api::ExplainOptions::all)
      .def_readwrite("verbose", &api::ExplainOptions::verbose);
  py::class_<api::QuantizeOptions>(m, "QuantizeOptions")
      .def(py::init<>())
      .def_readwrite("calibration", &api::QuantizeOptions::calibration)
      .def_readwrite("method", &api::QuantizeOptions::method)
      .def_readwrite("activation_type", &api::QuantizeOptions::activation_type)
      .def_readwrite("percentile", &api::QuantizeOptions::percentile)
      .def_readwrite("bias_correction", &api::QuantizeOptions::bias_correction)
      .def_readwrite("holdout", &api::QuantizeOptions::holdout)
      .def_readwrite("skip_layers", &api::QuantizeOptions::skip_layers)
      .def_readwrite("quantize_image_convs", &api::QuantizeOptions::quantize_image_convs)
      .def_readwrite("sensitivity", &api::QuantizeOptions::sensitivity)
      .def_readwrite("accuracy_target", &api::QuantizeOptions::accuracy_target)
      .def_readwrite("input_shape", &api::QuantizeOptions::input_shape)
      .def_readwrite("output", &api::QuantizeOptions::output);
  py::class_<api::RuleTestOptions>(m, "RuleTestOptions")
      .def(py::init<>())
      .def_readwrite("rules", &api::RuleTestOptions::rules)
      .def_readwrite("target", &api::RuleTestOptions::target)
      .def_readwrite("soundness", &api::RuleTestOptions::soundness);
}

// What the calls return: the optimized model, the plan, the reports.
void bind_results(py::module_& m) {
  py::class_<api::OptimizedModel>(m, "OptimizedModel")
      .def("save",
           [](const api::OptimizedModel& self, const std::string& path) {
             py::gil_scoped_release released;
             self.save(path);
           })
      .def("serialized", [](const api::OptimizedModel& self) {
        std::string bytes;
        {
          py::gil_scoped_release released;
          bytes = self.serialized();
        }
        return py::bytes(bytes);
      });
  py::class_<api::OptimizeResult>(m, "OptimizeResult")
      .def_readonly("model", &api::OptimizeResult::model)
      .def_readonly("check_ok", &api::OptimizeResult::check_ok)
      .def_property_readonly("report_json", [](const api::OptimizeResult& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::OptimizeResult& r) { return text(r.report_text); })
      .def_property_readonly("error", [](const api::OptimizeResult& r) { return text(r.error); });

  py::class_<api::Plan>(m, "Plan")
      .def_static("load",
                  [](const std::string& path) {
                    py::gil_scoped_release released;
                    return api::Plan::load(path);
                  })
      .def(
          "save",
          [](const api::Plan& self, const std::string& path, bool external_weights) {
            py::gil_scoped_release released;
            return self.save(path, external_weights);
          },
          py::arg("path"), py::arg("external_weights") = false)
      .def("run", &run_plan, py::arg("feeds"), py::arg("threads") = 0, py::arg("max_loop_trips") = 0)
      .def("inputs",
           [](const api::Plan& self) {
             py::list out;
             for (const auto& b : self.inputs()) out.append(py::make_tuple(text(b.name), b.dtype, b.shape));
             return out;
           })
      .def("outputs",
           [](const api::Plan& self) {
             py::list out;
             for (const auto& b : self.outputs()) out.append(py::make_tuple(text(b.name), b.dtype, b.shape));
             return out;
           })
      .def("dump_json", [](const api::Plan& self) { return text(self.dump_json()); })
      .def(
          "profile_json",
          [](const api::Plan& self, int gear) {
            std::string json;
            {
              py::gil_scoped_release released;
              json = self.profile_json(gear);
            }
            return text(json);
          },
          py::arg("gear") = 0);
  py::class_<api::CompileResult>(m, "CompileResult")
      .def_readonly("plan", &api::CompileResult::plan)
      .def_readonly("check_ok", &api::CompileResult::check_ok)
      .def_readonly("warnings", &api::CompileResult::warnings)
      .def_property_readonly("report_json", [](const api::CompileResult& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::CompileResult& r) { return text(r.report_text); })
      .def_property_readonly("error", [](const api::CompileResult& r) { return text(r.error); });
  py::class_<api::ExplainResult>(m, "ExplainResult")
      .def_property_readonly("report_json", [](const api::ExplainResult& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::ExplainResult& r) { return text(r.report_text); });
  py::class_<api::TuneResult>(m, "TuneResult")
      .def_property_readonly("bank_file", [](const api::TuneResult& r) { return text(r.bank_file); })
      .def_property_readonly("report_json", [](const api::TuneResult& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::TuneResult& r) { return text(r.report_text); });
  py::class_<api::QuantizeResult>(m, "QuantizeResult")
      .def_readonly("model", &api::QuantizeResult::model)
      .def_property_readonly("report_json", [](const api::QuantizeResult& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::QuantizeResult& r) { return text(r.report_text); });
  py::class_<api::RulesReport>(m, "RulesReport")
      .def_readonly("ok", &api::RulesReport::ok)
      .def_property_readonly("report_json", [](const api::RulesReport& r) { return text(r.report_json); })
      .def_property_readonly("report_text", [](const api::RulesReport& r) { return text(r.report_text); });
}

// A Python callable as the library's Progress (None: none). It is called from the working
// thread without the GIL; the callable is shared, never copied there (a copy would touch
// its reference count without the GIL). What it raises (KeyboardInterrupt too) stops the
// work and reaches the caller as raised (with_progress).
api::Progress progress_callback(const py::object& progress) {
  if (progress.is_none()) return {};
  auto callable = std::make_shared<py::object>(progress);
  return [callable](std::string_view stage, size_t done, size_t total) {
    py::gil_scoped_acquire held;
    try {
      (*callable)(std::string(stage), done, total);
    } catch (py::error_already_set& e) {
      e.restore();
      throw PythonRaised{};
    }
  };
}

// Runs `work` with the GIL released; a progress callback's exception is raised again.
template <class Work>
auto with_progress(Work&& work) {
  try {
    py::gil_scoped_release released;
    return work();
  } catch (const PythonRaised&) {
    throw py::error_already_set();
  }
}

// The calls, each with the GIL released while geopt works.
void bind_calls(py::module_& m) {
  m.def("explain", [](const api::ModelSource& model, const api::ExplainOptions& options) {
    py::gil_scoped_release released;
    return api::explain(model, options);
  });
  m.def("quantize", [](const api::ModelSource& model, api::QuantizeOptions options, py::object progress) {
    options.progress = progress_callback(progress);
    return with_progress([&] { return api::quantize(model, options); });
  });
  m.def("tune", [](const api::ModelSource& model, api::TuneOptions options, py::object progress) {
    options.progress = progress_callback(progress);
    return with_progress([&] { return api::tune(model, options); });
  });
  m.def("rules_check", [](const std::vector<std::string>& paths) {
    py::gil_scoped_release released;
    return api::rules_check(paths);
  });
  m.def("rules_test", [](const api::RuleTestOptions& options) {
    py::gil_scoped_release released;
    return api::rules_test(options);
  });
  m.def("rules_match", [](const api::ModelSource& model, const api::RuleOptions& rules) {
    py::gil_scoped_release released;
    return api::rules_match(model, rules);
  });
  m.def("optimize", [](const api::ModelSource& model, const api::OptimizeOptions& options) {
    py::gil_scoped_release released;
    return api::optimize(model, options);
  });
  m.def("compile", [](const api::ModelSource& model, const api::CompileOptions& options) {
    py::gil_scoped_release released;
    return api::compile(model, options);
  });
}

}  // namespace

PYBIND11_MODULE(_geopt, m) {
  m.doc() = "geopt's C++ API; use the `geopt` package, which wraps it";
  m.attr("__version__") = api::version();
  m.def("set_log_level", &api::set_log_level, py::arg("level"));
  bind_errors(m);
  bind_options(m);
  bind_results(m);
  bind_calls(m);
}
