#pragma once
// JSON reports as text. nlohmann refuses to dump a string that is not UTF-8 (a path
// the user gave in Latin-1); such strings, and keys, are shown escaped (\xNN) instead.
#include <nlohmann/json.hpp>

#include <string>

#include "util/text.h"

namespace geopt::api {

template <class Json>
Json text_only(const Json& j) {
  if (j.is_string()) return Json(as_text(j.template get_ref<const std::string&>()));
  if (j.is_array()) {
    Json out = Json::array();
    for (const auto& e : j) out.push_back(text_only(e));
    return out;
  }
  if (j.is_object()) {
    Json out = Json::object();
    for (const auto& [k, v] : j.items()) out[as_text(k)] = text_only(v);
    return out;
  }
  return j;
}

template <class Json>
std::string json_text(const Json& j) {
  try {
    return j.dump(2);
  } catch (const typename Json::type_error&) {  // 316: invalid UTF-8
    return text_only(j).dump(2);
  }
}

}  // namespace geopt::api
