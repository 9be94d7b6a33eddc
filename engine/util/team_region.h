#pragma once
// Where a kernel's loop runs: on the OpenMP team, or on this thread alone.
//
// A kernel writes `team_region(wide, [&] { #pragma omp for ... })` rather than
// `#pragma omp parallel for if (wide)`: libgomp ends even a one-thread region (the `if`
// false) with a futex system call, 1.2 us on a 2-core virtual machine and several under
// load, more than a small kernel's whole work (a squeeze-and-excitation gate's product,
// a 1 x 1 plane's pool): `strace -c` counted one a kernel of a chain of small convs.
// Outside a parallel region the `omp for` runs its whole loop on this thread, with no
// system call. (libgomp is the Python module's runtime, and the executables' with
// -DGEOPT_LLVM_OPENMP=OFF; LLVM's libomp takes 0.16 us for such a region.)

namespace geopt {

template <class Region>
void team_region(bool wide, Region&& region) {
  if (wide) {
#pragma omp parallel
    region();
  } else {
    region();
  }
}

}  // namespace geopt
