#pragma once
// What the host CPU offers, read once: the hand-vectorized loops (their AVX-512 paths)
// ask here before they take a path compiled for instructions the CPU may lack.

namespace geopt {

inline bool cpu_has_avx512f() {
  static const bool has = __builtin_cpu_supports("avx512f");
  return has;
}

}  // namespace geopt
