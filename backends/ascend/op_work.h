#pragma once
// The work of each op class on an Ascend core: its Cube products, its Vector operations,
// the traffic and launches of the layout conversions it needs, its smallest tile. One
// function per class, chosen by op name (op_work.cpp); cost_model.cpp's work_of adds it to
// the memory traffic every kernel has, and cost_of prices the total on a profile.
#include <string>
#include <vector>

#include "cost_model.h"

namespace geopt::ascend {

int64_t dim_value(const Dim& d, const CostOptions& o);

// Static element count and dims of a value (symbolic dims replaced), read from its
// shape in place: the extractor prices every e-node, so this allocates nothing.
struct Extent {
  const Shape* shape = nullptr;
  int64_t symbolic = 1;
  double elements = 0;
  DType dtype = DType::F32;
  bool known = false;

  size_t rank() const { return shape ? shape->rank() : 0; }
  bool empty() const { return rank() == 0; }
  int64_t dim(size_t i) const { return (*shape)[i].is_static() ? (*shape)[i].value() : symbolic; }
  int64_t front() const { return dim(0); }
  int64_t back() const { return dim(rank() - 1); }
};

Extent extent(const ValueType* t, const CostOptions& o);
// Bytes per element of a value the op reads or writes, in the dtype it computes in.
double compute_bytes(DType t, const std::string& op_type, const CostOptions& o);
const Attribute* find_attr(const KernelDesc& k, const char* name);
const ValueType* at(const std::vector<const ValueType*>& v, size_t i);

// What the op classes' functions share: the kernel, the options, its output's extent, the
// compute type's bytes per element, and the work they add to.
struct OpWork {
  const KernelDesc& n;
  const CostOptions& o;
  Extent out;
  double bytes = 0;
  KernelWork& w;

  // A tensor read or written once more (a layout conversion's).
  void move(double b, bool constant, bool read) const;
  bool is_constant(size_t input) const { return input < 64 && (n.constant_inputs >> input & 1); }
};

// Adds the work of the kernel's op class (by its name) to c.w.
void add_op_work(const OpWork& c);

}  // namespace geopt::ascend
