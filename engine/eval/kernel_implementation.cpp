#include "eval/kernel_implementation.h"

namespace geopt {
namespace {
thread_local std::string note;
}  // namespace

void note_implementation(std::string_view what) { note.assign(what); }

std::string take_implementation() {
  std::string taken;
  taken.swap(note);
  return taken;
}

}  // namespace geopt
