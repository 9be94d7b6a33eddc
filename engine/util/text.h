#pragma once
// Text that reports, JSON and plan files carry: well-formed UTF-8, or bytes shown escaped.
#include <string>
#include <string_view>

namespace geopt {

// Well-formed UTF-8: no stray continuation bytes, overlong forms or surrogates.
bool valid_utf8(std::string_view s);
// Every byte outside printable ASCII as \xNN, for a message about a name or path.
std::string escaped(std::string_view s);
// `s` itself where it is valid UTF-8, else escaped(s): a path a user gave (a file name
// in Latin-1) shown as text JSON can carry.
std::string as_text(std::string_view s);

}  // namespace geopt
