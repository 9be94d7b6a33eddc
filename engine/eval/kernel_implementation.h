#pragma once
// Which implementation a kernel ran: oneDNN's primitive (by its name, "brgconv:avx512_core_vnni")
// or geopt's own loops, for `geopt run --profile` (which kernels a plan really used on this
// machine). A kernel notes it on the thread that calls it; whoever times the call takes
// the note afterwards.
#include <string>
#include <string_view>

namespace geopt {

// Replaces this thread's note.
void note_implementation(std::string_view what);
// This thread's note (empty where the last kernel noted none), cleared.
std::string take_implementation();

}  // namespace geopt
