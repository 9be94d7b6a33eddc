#include "eval/host_tactic.h"

#include <algorithm>
#include <charconv>

#include "util/error.h"
#include "util/text.h"

namespace geopt {

const std::vector<std::pair<ConvAlgorithm, std::string_view>>& conv_algorithm_names() {
  static const std::vector<std::pair<ConvAlgorithm, std::string_view>> names{
      {ConvAlgorithm::automatic, "auto"},
      {ConvAlgorithm::direct, "direct"},
      {ConvAlgorithm::winograd, "winograd"},
      {ConvAlgorithm::geopt, "geopt"}};
  return names;
}

const std::vector<std::pair<ConvLayout, std::string_view>>& conv_layout_names() {
  static const std::vector<std::pair<ConvLayout, std::string_view>> names{{ConvLayout::automatic, "auto"},
                                                                          {ConvLayout::caller, "caller"},
                                                                          {ConvLayout::onednn, "onednn"},
                                                                          {ConvLayout::nhwc, "nhwc"},
                                                                          {ConvLayout::blocked, "blocked"}};
  return names;
}

const std::vector<std::pair<ChannelMoves, std::string_view>>& channel_moves_names() {
  static const std::vector<std::pair<ChannelMoves, std::string_view>> names{
      {ChannelMoves::automatic, "auto"}, {ChannelMoves::words, "words"}, {ChannelMoves::permute, "permute"}};
  return names;
}

const std::vector<std::pair<WeightPacking, std::string_view>>& weight_packing_names() {
  static const std::vector<std::pair<WeightPacking, std::string_view>> names{
      {WeightPacking::automatic, "auto"}, {WeightPacking::plain, "plain"}};
  return names;
}

namespace {

template <class Enum>
std::string_view name_of(const std::vector<std::pair<Enum, std::string_view>>& names, Enum value) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "?";
}

template <class Enum>
bool value_of(const std::vector<std::pair<Enum, std::string_view>>& names, std::string_view name,
              Enum& value) {
  for (const auto& [v, n] : names)
    if (n == name) {
      value = v;
      return true;
    }
  return false;
}

template <class Enum>
std::string listed(const std::vector<std::pair<Enum, std::string_view>>& names) {
  std::string text;
  for (const auto& [v, n] : names) text += (text.empty() ? "" : ", ") + std::string(n);
  return text;
}

}  // namespace

std::string tactic_text(const HostTactic& t) {
  std::string text;
  auto add = [&](std::string_view knob, std::string_view value) {
    text.append(text.empty() ? "" : ",").append(knob).append("=").append(value);
  };
  if (t.conv_algorithm != ConvAlgorithm::automatic)
    add("algorithm", name_of(conv_algorithm_names(), t.conv_algorithm));
  if (t.conv_layout != ConvLayout::automatic) add("layout", name_of(conv_layout_names(), t.conv_layout));
  if (t.moves != ChannelMoves::automatic) add("moves", name_of(channel_moves_names(), t.moves));
  if (t.threads != 0) add("threads", std::to_string(t.threads));
  if (t.packing != WeightPacking::automatic) add("packing", name_of(weight_packing_names(), t.packing));
  return text;
}

HostTactic parse_tactic(std::string_view text) {
  HostTactic t;
  auto fail = [&](const std::string& why) -> void {
    throw Error("host tactic '" + escaped(text.substr(0, 200)) + "': " + why);
  };
  auto shown = [](std::string_view part) { return escaped(part.substr(0, 64)); };  // from a file: not trusted
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) fail("'" + shown(item) + "' is not KNOB=VALUE");
    const std::string_view knob = item.substr(0, eq), value = item.substr(eq + 1);
    if (knob == "algorithm") {
      if (!value_of(conv_algorithm_names(), value, t.conv_algorithm))
        fail("algorithm '" + shown(value) + "' is none of " + listed(conv_algorithm_names()));
    } else if (knob == "layout") {
      if (!value_of(conv_layout_names(), value, t.conv_layout))
        fail("layout '" + shown(value) + "' is none of " + listed(conv_layout_names()));
    } else if (knob == "moves") {
      if (!value_of(channel_moves_names(), value, t.moves))
        fail("moves '" + shown(value) + "' is none of " + listed(channel_moves_names()));
    } else if (knob == "threads") {
      int n = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > kMaxTacticThreads)
        fail("threads '" + shown(value) + "' is not a count from 1 to " + std::to_string(kMaxTacticThreads));
      t.threads = n;
    } else if (knob == "packing") {
      if (!value_of(weight_packing_names(), value, t.packing))
        fail("packing '" + shown(value) + "' is none of " + listed(weight_packing_names()));
    } else {
      fail("unknown knob '" + shown(knob) + "' (algorithm, layout, moves, threads, packing)");
    }
  }
  return t;
}

}  // namespace geopt
