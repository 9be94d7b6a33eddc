// Fits a hardware profile's efficiency parameters to published measurements, and prints
// how far the cost model is from each of them. bench/cost_fidelity.sh runs it.
//
//   geopt_cost_fit POINTS.toml OPTIMIZED_DIR [--fit] [--norm P] [--set SOC:KEY=VALUE ...]
//
// POINTS.toml lists the published points ([[point]]: name, soc, batch, fps or us, source,
// fit = true for a calibration point, standalone = true for a kernel timed on its own,
// options: the optimize options its compile used that change prices) and
// per soc the keys to fit with their bounds ([fit.SOC] keys, low, high). OPTIMIZED_DIR
// holds point_<i>.onnx: the model of point i as `geopt optimize` wrote it (static shapes).
// A point's modeled latency is what optimize reports (cost_of_model); a standalone kernel
// adds the profile's launch.standalone_us (one launch timed from the host).
//
// --fit minimizes the 8-norm of the calibration points' ln(modeled / published) (--norm P
// sets another; 2 is least squares) by Nelder-Mead in the box the bounds give
// (deterministic: the start is the profile's value); only calibration points enter it. A
// high norm weighs the worst point most, as a bound on every point's error asks: least
// squares left one point at 16% while the rest were within 11%. The result is printed as
// --profile-set arguments.
#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ascend/cost_model.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "onnx/import.h"
#include "util/error.h"

namespace {
using namespace geopt;
using namespace geopt::ascend;

struct Point {
  std::string name, soc, source;
  double batch = 1, published_us = 0;
  bool fit = false, standalone = false;
  CostOptions cost;  // the point's `options`, as optimize priced its model
  Model model;
};

struct FreeKey {
  std::string key;
  double low = 0, high = 1;
};

using Overrides = std::map<std::string, std::map<std::string, std::string>>;  // soc -> key -> value

std::string number_text(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

double modeled_us(const Point& p, const Overrides& set) {
  auto it = set.find(p.soc);
  const HardwareProfile profile =
      load_profile(p.soc, it == set.end() ? std::map<std::string, std::string>{} : it->second);
  double us = cost_of_model(p.model, profile, p.cost).latency_us;
  if (p.standalone) us += profile.launch_standalone_us;
  return us;
}

// The P-norm of the calibration points' log ratios: P = 2 is least squares; a large P
// weighs the worst point most, as a bound on every point's error asks.
double loss(const std::vector<Point>& points, const std::string& soc, const Overrides& set, double norm) {
  double sum = 0;
  for (const Point& p : points)
    if (p.fit && p.soc == soc)
      sum += std::pow(std::fabs(std::log(modeled_us(p, set) / p.published_us)), norm);
  return std::pow(sum, 1 / norm);
}

// Nelder-Mead over u in [0, 1]^n, value = low + u (high - low).
std::vector<double> fit_soc(const std::vector<Point>& points, const std::string& soc,
                            const std::vector<FreeKey>& keys, Overrides& set, double norm) {
  const size_t n = keys.size();
  auto apply = [&](const std::vector<double>& u) {
    for (size_t j = 0; j < n; ++j) {
      const double c = std::clamp(u[j], 0.0, 1.0);
      set[soc][keys[j].key] = number_text(keys[j].low + c * (keys[j].high - keys[j].low));
    }
  };
  auto f = [&](const std::vector<double>& u) {
    apply(u);
    double penalty = 0;  // outside the box: the clamped value, plus the distance
    for (double x : u) penalty += x < 0 ? -x : x > 1 ? x - 1 : 0;
    return loss(points, soc, set, norm) + penalty;
  };
  const HardwareProfile start = load_profile(soc);
  std::vector<double> u0(n);
  const toml::table shipped = toml::parse_file(start.source);
  for (size_t j = 0; j < n; ++j) {  // the profile's own value, as the start
    const double v = shipped.at_path(keys[j].key).value<double>().value_or(keys[j].low);
    u0[j] = std::clamp((v - keys[j].low) / (keys[j].high - keys[j].low), 0.0, 1.0);
  }
  std::vector<std::vector<double>> simplex(n + 1, u0);
  for (size_t j = 0; j < n; ++j) simplex[j + 1][j] += simplex[j + 1][j] > 0.5 ? -0.2 : 0.2;
  std::vector<double> values;
  for (const auto& s : simplex) values.push_back(f(s));
  for (int iteration = 0; iteration < 600 * static_cast<int>(n); ++iteration) {
    std::vector<size_t> order(n + 1);
    for (size_t i = 0; i <= n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
    const size_t best = order.front(), worst = order.back(), second = order[n - 1];
    if (values[worst] - values[best] < 1e-10) break;
    std::vector<double> centroid(n, 0);
    for (size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (size_t j = 0; j < n; ++j) centroid[j] += simplex[i][j] / static_cast<double>(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (size_t j = 0; j < n; ++j) x[j] = centroid[j] + t * (simplex[worst][j] - centroid[j]);
      return x;
    };
    std::vector<double> r = along(-1);
    const double fr = f(r);
    if (fr < values[best]) {
      std::vector<double> e = along(-2);
      const double fe = f(e);
      if (fe < fr)
        simplex[worst] = e, values[worst] = fe;
      else
        simplex[worst] = r, values[worst] = fr;
    } else if (fr < values[second]) {
      simplex[worst] = r, values[worst] = fr;
    } else {
      std::vector<double> c = along(0.5);
      const double fc = f(c);
      if (fc < values[worst]) {
        simplex[worst] = c, values[worst] = fc;
      } else {
        for (size_t i = 0; i <= n; ++i)
          if (i != best) {
            for (size_t j = 0; j < n; ++j)
              simplex[i][j] = simplex[best][j] + 0.5 * (simplex[i][j] - simplex[best][j]);
            values[i] = f(simplex[i]);
          }
      }
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(values.begin(), values.end()) - values.begin());
  apply(simplex[best]);
  std::vector<double> out;
  for (size_t j = 0; j < n; ++j) out.push_back(std::stod(set[soc][keys[j].key]));
  return out;
}

void print_table(const std::vector<Point>& points, const Overrides& set, const char* title) {
  std::printf("\n%s\n", title);
  std::printf(
      "| point | soc | use | published | modeled | modeled / published |\n|---|---|---|---|---|---|\n");
  std::vector<double> fit_err, check_err;
  for (const Point& p : points) {
    const double m = modeled_us(p, set);
    const double ratio = m / p.published_us;
    (p.fit ? fit_err : check_err).push_back(std::fabs(std::log(ratio)));
    std::printf("| %s | %s | %s | %.1f us | %.1f us | %.2f |\n", p.name.c_str(), p.soc.c_str(),
                p.fit ? "fit" : "check", p.published_us, m, ratio);
  }
  auto median = [](std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
  };
  auto worst = [](const std::vector<double>& v) {
    return v.empty() ? 0.0 : *std::max_element(v.begin(), v.end());
  };
  std::printf("\ncalibration points: median |ln(modeled/published)| %.3f (x%.3f), worst x%.3f\n",
              median(fit_err), std::exp(median(fit_err)), std::exp(worst(fit_err)));
  if (!check_err.empty())
    std::printf("check points:       median |ln(modeled/published)| %.3f (x%.3f), worst x%.3f\n",
                median(check_err), std::exp(median(check_err)), std::exp(worst(check_err)));
}

int run(int argc, char** argv) {
  ascend::register_op_schemas();  // the optimized models name Ascend's ops
  if (argc < 3) {
    std::fprintf(
        stderr,
        "usage: geopt_cost_fit POINTS.toml OPTIMIZED_DIR [--fit] [--norm P] [--set SOC:KEY=VALUE ...]\n");
    return 2;
  }
  const std::filesystem::path dir = argv[2];
  bool fit = false;
  double norm = 8;
  Overrides set;
  for (int i = 3; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--fit") {
      fit = true;
    } else if (a == "--norm" && i + 1 < argc) {
      norm = std::stod(argv[++i]);
      if (!(norm >= 1 && norm <= 64)) throw UsageError("--norm takes 1..64");
    } else if (a == "--set" && i + 1 < argc) {
      const std::string v = argv[++i];
      const size_t colon = v.find(':'), eq = v.find('=');
      if (colon == std::string::npos || eq == std::string::npos || eq < colon)
        throw UsageError("--set SOC:KEY=VALUE, not " + v);
      set[v.substr(0, colon)][v.substr(colon + 1, eq - colon - 1)] = v.substr(eq + 1);
    } else {
      throw UsageError("unknown argument " + a);
    }
  }
  toml::table t = toml::parse_file(argv[1]);
  std::vector<Point> points;
  size_t index = 0;
  for (const toml::node& node : *t["point"].as_array()) {
    const toml::table& pt = *node.as_table();
    Point p;
    p.name = pt["name"].value_or(std::string{});
    p.soc = pt["soc"].value_or(std::string{});
    p.source = pt["source"].value_or(std::string{});
    p.batch = pt["batch"].value_or(1.0);
    if (auto fps = pt["fps"].value<double>()) p.published_us = p.batch / *fps * 1e6;
    if (auto us = pt["us"].value<double>()) p.published_us = *us;
    p.fit = pt["fit"].value_or(false);
    p.standalone = pt["standalone"].value_or(false);
    if (const toml::array* options = pt["options"].as_array())
      for (const toml::node& option : *options) {
        const std::string o = option.value_or(std::string{});
        if (o != "--enable_small_channel")
          throw Error(p.name + ": geopt_cost_fit does not price option '" + o + "'");
        p.cost.small_channel = true;
      }
    const std::filesystem::path file = dir / ("point_" + std::to_string(index++) + ".onnx");
    p.model = import_onnx(file);
    if (!(p.published_us > 0)) throw Error(p.name + ": no fps or us");
    points.push_back(std::move(p));
  }
  print_table(points, set, "as the profiles stand (with --set)");
  if (!fit) return 0;
  std::printf("\nfitted (only the calibration points):\n");
  if (const toml::table* fits = t["fit"].as_table())
    for (const auto& [soc_key, spec] : *fits) {
      const std::string soc(soc_key.str());
      std::vector<FreeKey> keys;
      const toml::table& s = *spec.as_table();
      const toml::array& names = *s["keys"].as_array();
      const toml::array& low = *s["low"].as_array();
      const toml::array& high = *s["high"].as_array();
      for (size_t j = 0; j < names.size(); ++j)
        keys.push_back({names[j].value_or(std::string{}), low[j].value_or(0.0), high[j].value_or(1.0)});
      const std::vector<double> values = fit_soc(points, soc, keys, set, norm);
      for (size_t j = 0; j < keys.size(); ++j)
        std::printf("  %s %s = %s\n", soc.c_str(), keys[j].key.c_str(), number_text(values[j]).c_str());
    }
  print_table(points, set, "with the fitted values");
  std::printf("\nas --set arguments:");
  for (const auto& [soc, kv] : set)
    for (const auto& [k, v] : kv) std::printf(" --set %s:%s=%s", soc.c_str(), k.c_str(), v.c_str());
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "geopt_cost_fit: %s\n", e.what());
    return 1;
  }
}
