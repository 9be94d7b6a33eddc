#include "ascend/dynamic_shapes.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "onnx/import.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

constexpr size_t kMaxGears = 100;  // ATC's limit

const char* option_name(GearKind kind) {
  switch (kind) {
    case GearKind::batch_size:
      return "--dynamic_batch_size";
    case GearKind::image_size:
      return "--dynamic_image_size";
    case GearKind::dims:
      return "--dynamic_dims";
  }
  return "";
}

std::vector<std::string> split(const std::string& text, char by) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  std::string part;
  while (std::getline(in, part, by)) parts.push_back(part);
  if (!text.empty() && text.back() == by) parts.emplace_back();
  return parts;
}

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// A whole number at least `least`, or nullopt.
std::optional<int64_t> number(const std::string& text, int64_t least) {
  const std::string t = trimmed(text);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(t, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != t.size() || v < least) return std::nullopt;
  return v;
}

// ATC's form of dims, "1,3,224,224" (util/checked_size.h's dims_text brackets them).
std::string comma_list(const std::vector<int64_t>& dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
  return text;
}

const Value* graph_input(const Model& model, const std::string& name) {
  for (const Value* v : model.graph->inputs())
    if (!v->initializer && v->name() == name) return v;
  return nullptr;
}

// Inputs that no option names must be static in the model.
void require_static_rest(const Model& model, const std::set<std::string>& named, const std::string& option) {
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer || named.count(v->name())) continue;
    if (!v->type.shape || !v->type.shape->is_static())
      throw Error(option + ": input '" + v->name() + "' is " + v->type.to_string() +
                  ", with dims that are not static; give it in " + option);
  }
}

// A dynamic dim of --input_shape: where it is, and the symbol the model names it by.
struct Hole {
  std::string input;
  size_t axis = 0;
  std::string symbol;  // the model's dim_param; empty when the dim is unnamed
};

}  // namespace

std::vector<InputShapes> parse_gears(const Model& model, const std::string& input_shape, GearKind kind,
                                     const std::string& gears) {
  const std::string option = option_name(kind);
  if (trimmed(input_shape).empty())
    throw Error(option +
                " needs --input_shape with -1 at the dims it sets, e.g. --input_shape "
                "\"input_ids:1,-1;attention_mask:1,-1\"");
  InputShapes base;
  std::vector<Hole> holes;
  std::set<std::string> named;
  for (const auto& [name, dims] : parse_input_shape_entries(input_shape)) {
    const Value* v = graph_input(model, name);
    if (!v) throw Error("--input_shape names '" + name + "', which is not an input of the model");
    if (!v->type.shape || v->type.shape->rank() != dims.size())
      throw Error("--input_shape gives input '" + name + "' " + std::to_string(dims.size()) +
                  " dims, the model declares " + v->type.to_string());
    named.insert(name);
    base[name] = dims;
    for (size_t a = 0; a < dims.size(); ++a)
      if (dims[a] < 0) {
        const Dim& d = (*v->type.shape)[a];
        if (d.is_static())
          throw Error("--input_shape marks dim " + std::to_string(a) + " of input '" + name +
                      "' dynamic (-1), but the model fixes it at " + std::to_string(d.value()));
        if (kind == GearKind::batch_size && a != 0)
          throw Error(option + ": --input_shape marks dim " + std::to_string(a) + " of input '" + name +
                      "' as -1; a batch size sets dim 0 only (use --dynamic_dims for other dims)");
        holes.push_back({name, a, d.is_symbolic() ? d.symbol_name() : std::string()});
      }
  }
  require_static_rest(model, named, option);
  if (holes.empty())
    throw Error(option +
                ": --input_shape marks no dim as dynamic (-1), so there is nothing for the gears to set");
  std::vector<std::string> symbols;  // distinct, in order of first appearance (an unnamed dim is its own)
  std::vector<size_t> symbol_of;
  for (const Hole& h : holes) {
    auto it = h.symbol.empty() ? symbols.end() : std::find(symbols.begin(), symbols.end(), h.symbol);
    if (it == symbols.end()) {
      symbol_of.push_back(symbols.size());
      symbols.push_back(h.symbol.empty() ? h.input + ":" + std::to_string(h.axis) : h.symbol);
    } else {
      symbol_of.push_back(static_cast<size_t>(it - symbols.begin()));
    }
  }

  std::vector<std::vector<int64_t>> values;  // per gear
  if (kind == GearKind::batch_size) {
    for (const std::string& g : split(gears, ',')) {
      auto n = number(g, 1);
      if (!n)
        throw Error(option + " '" + gears + "': '" + trimmed(g) +
                    "' is not a batch size (a whole number from 1)");
      values.push_back(std::vector<int64_t>(holes.size(), *n));
    }
  } else {
    for (const std::string& g : split(gears, ';')) {
      std::vector<int64_t> gear;
      for (const std::string& d : split(g, ',')) {
        auto n = number(d, 1);
        if (!n)
          throw Error(option + " '" + gears + "': gear '" + trimmed(g) + "': '" + trimmed(d) +
                      "' is not a size (a whole number from 1)");
        gear.push_back(*n);
      }
      if (kind == GearKind::image_size) {
        if (gear.size() != 2) throw Error(option + " '" + gears + "': gear '" + trimmed(g) + "' is not H,W");
        std::map<std::string, size_t> per_input;
        for (const Hole& h : holes) ++per_input[h.input];
        for (const auto& [input, n] : per_input)
          if (n != 2)
            throw Error(option + ": --input_shape marks " + std::to_string(n) + " dim(s) of '" + input +
                        "' as -1; an image size sets two (H and W)");
        std::vector<int64_t> each;
        std::map<std::string, size_t> seen;
        for (const Hole& h : holes) each.push_back(gear[seen[h.input]++]);
        values.push_back(each);
      } else if (gear.size() == holes.size()) {
        // One value per -1; dims the model names alike must get one value.
        for (size_t i = 0; i < holes.size(); ++i)
          for (size_t j = 0; j < i; ++j)
            if (symbol_of[i] == symbol_of[j] && gear[i] != gear[j])
              throw Error(option + " '" + gears + "': gear '" + trimmed(g) + "' gives '" + holes[j].input +
                          "' dim " + std::to_string(holes[j].axis) + " " + std::to_string(gear[j]) +
                          " and '" + holes[i].input + "' dim " + std::to_string(holes[i].axis) + " " +
                          std::to_string(gear[i]) + ", which the model names alike ('" +
                          symbols[symbol_of[i]] + "'): one size");
        values.push_back(gear);
      } else if (gear.size() == symbols.size()) {
        std::vector<int64_t> each;
        for (size_t i = 0; i < holes.size(); ++i) each.push_back(gear[symbol_of[i]]);
        values.push_back(each);
      } else {
        std::string listed;
        for (const std::string& s : symbols) listed += (listed.empty() ? "" : ", ") + s;
        throw Error(option + " '" + gears + "': gear '" + trimmed(g) + "' gives " +
                    std::to_string(gear.size()) + " value(s); --input_shape marks " +
                    std::to_string(holes.size()) + " dim(s) as -1 (" + std::to_string(symbols.size()) +
                    " distinct: " + listed + "), so a gear gives one value for each, in order");
      }
    }
  }
  if (values.empty()) throw Error(option + " is empty: give at least one gear");
  if (values.size() > kMaxGears)
    throw Error(option + ": " + std::to_string(values.size()) + " gears, more than ATC's " +
                std::to_string(kMaxGears));

  std::vector<InputShapes> result;
  std::set<InputShapes> distinct;
  for (const auto& gear : values) {
    InputShapes shapes = base;
    for (size_t i = 0; i < holes.size(); ++i) shapes[holes[i].input][holes[i].axis] = gear[i];
    for (const Value* v : model.graph->inputs())
      if (!v->initializer && !shapes.count(v->name())) {
        std::vector<int64_t> dims;
        for (const Dim& d : v->type.shape->dims()) dims.push_back(d.value());
        shapes[v->name()] = dims;
      }
    if (!distinct.insert(shapes).second)
      throw Error(option + " '" + gears + "': the gear " + input_shapes_text(model, shapes) +
                  " is given twice");
    result.push_back(std::move(shapes));
  }
  return result;
}

InputRanges parse_input_shape_range(const Model& model, const std::string& text) {
  const std::string option = "--input_shape_range";
  InputRanges ranges;
  std::set<std::string> named;
  for (const std::string& raw : split(text, ';')) {
    const std::string entry = trimmed(raw);
    if (entry.empty()) continue;
    const size_t open = entry.find('[');
    const size_t colon = open == std::string::npos ? std::string::npos : entry.rfind(':', open);
    if (colon == std::string::npos || colon == 0 || entry.back() != ']' || colon + 1 != open)
      throw Error(option + " '" + entry +
                  "': expected NAME:[D1,D2,...], each dim a size or MIN~MAX (e.g. input_ids:[1,1~512])");
    const std::string name = entry.substr(0, colon);
    const Value* v = graph_input(model, name);
    if (!v) throw Error(option + " names '" + name + "', which is not an input of the model");
    std::vector<DimRange> dims;
    for (const std::string& d : split(entry.substr(open + 1, entry.size() - open - 2), ',')) {
      const std::string t = trimmed(d);
      const size_t tilde = t.find('~');
      auto lo = number(tilde == std::string::npos ? t : t.substr(0, tilde), -1);
      auto hi = tilde == std::string::npos ? lo : number(t.substr(tilde + 1), -1);
      if (!lo || !hi) throw Error(option + " '" + entry + "': '" + t + "' is not a size or MIN~MAX");
      if (*lo < 0 || *hi < 0)
        throw Error(
            option + " '" + entry + "': '" + t +
            "' is unbounded; geopt plans memory at the range's upper bound, so give one (e.g. 1~512)");
      if (*lo > *hi) throw Error(option + " '" + entry + "': '" + t + "' has its minimum above its maximum");
      if (*hi > (int64_t{1} << 31))
        throw Error(option + " '" + entry + "': '" + t + "' is larger than a dim can be here (2^31)");
      dims.push_back({*lo, *hi});
    }
    if (!v->type.shape || v->type.shape->rank() != dims.size())
      throw Error(option + " gives input '" + name + "' " + std::to_string(dims.size()) +
                  " dims, the model declares " + v->type.to_string());
    for (size_t a = 0; a < dims.size(); ++a) {
      const Dim& declared = (*v->type.shape)[a];
      if (declared.is_static() && (dims[a].min != declared.value() || dims[a].max != declared.value()))
        throw Error(option + " gives dim " + std::to_string(a) + " of input '" + name + "' the range " +
                    std::to_string(dims[a].min) + "~" + std::to_string(dims[a].max) +
                    ", the model fixes it at " + std::to_string(declared.value()));
    }
    if (!named.insert(name).second) throw Error(option + " names input '" + name + "' twice");
    ranges[name] = std::move(dims);
  }
  if (ranges.empty())
    throw Error(option + " is empty: give each dynamic input's dims, e.g. input_ids:[1,1~512]");
  require_static_rest(model, named, option);
  return ranges;
}

std::string input_shapes_text(const Model& model, const InputShapes& shapes) {
  std::string text;
  for (const Value* v : model.graph->inputs())
    if (auto it = shapes.find(v->name()); !v->initializer && it != shapes.end())
      text += (text.empty() ? "" : ";") + v->name() + ":" + comma_list(it->second);
  return text;
}

std::string input_ranges_text(const Model& model, const InputRanges& ranges) {
  std::string text;
  for (const Value* v : model.graph->inputs()) {
    auto it = ranges.find(v->name());
    if (v->initializer || it == ranges.end()) continue;
    std::string dims;
    for (const DimRange& r : it->second)
      dims += (dims.empty() ? "" : ",") + std::to_string(r.min) +
              (r.min == r.max ? "" : "~" + std::to_string(r.max));
    text += (text.empty() ? "" : ";") + v->name() + ":[" + dims + "]";
  }
  return text;
}

void set_dim_ranges(Model& model, const InputRanges& ranges) {
  for (const Value* v : model.graph->inputs()) {
    auto it = ranges.find(v->name());
    if (v->initializer || it == ranges.end() || !v->type.shape) continue;
    for (size_t a = 0; a < it->second.size() && a < v->type.shape->rank(); ++a) {
      const Dim& d = (*v->type.shape)[a];
      if (!d.is_symbolic()) continue;
      const auto range = std::make_pair(it->second[a].min, it->second[a].max);
      auto [known, fresh] = model.graph->dim_ranges.emplace(d.symbol_name(), range);
      if (!fresh && known->second != range)
        throw Error("--input_shape_range gives the dim '" + d.symbol_name() + "' two ranges (" +
                    std::to_string(known->second.first) + "~" + std::to_string(known->second.second) +
                    " and " + std::to_string(range.first) + "~" + std::to_string(range.second) +
                    "); the model says they are one size");
    }
  }
}

Model with_input_dims(const Model& model, const InputShapes& shapes) {
  Model m = model.clone();
  for (Value* v : m.graph->inputs()) {
    auto it = shapes.find(v->name());
    if (v->initializer || it == shapes.end()) continue;
    if (v->type.shape && v->type.shape->rank() != it->second.size())
      throw Error("input '" + v->name() + "' is " + v->type.to_string() + "; it cannot take the dims " +
                  comma_list(it->second));
    std::vector<Dim> dims(it->second.begin(), it->second.end());
    v->type.shape = Shape(std::move(dims));
  }
  return m;
}

}  // namespace geopt::ascend
