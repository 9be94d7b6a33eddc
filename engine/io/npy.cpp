#include "io/npy.h"

#include <cstring>
#include <fstream>
#include <regex>
#include <sstream>

#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};

constexpr NpyType kTypes[] = {
    {"<f4", DType::F32}, {"<f8", DType::F64}, {"<f2", DType::F16}, {"<i8", DType::I64}, {"<i4", DType::I32},
    {"<i2", DType::I16}, {"|i1", DType::I8},  {"|u1", DType::U8},  {"<u2", DType::U16}, {"<u4", DType::U32},
    {"<u8", DType::U64}, {"|b1", DType::Bool},
};

}  // namespace

HostTensor read_npy(const std::filesystem::path& path) {
  const std::string where = path.string() + ": ";
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + "cannot open");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string bytes = ss.str();
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0) throw Error(where + "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  size_t header_len, header_start;
  if (major == 1) {
    header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<size_t>(static_cast<unsigned char>(bytes[9])) << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Error(where + "truncated header");
    header_len = 0;
    for (int i = 3; i >= 0; --i) header_len = (header_len << 8) | static_cast<unsigned char>(bytes[8 + static_cast<size_t>(i)]);
    header_start = 12;
  } else {
    throw Error(where + "unsupported .npy version " + std::to_string(major));
  }
  if (header_start + header_len > bytes.size()) throw Error(where + "truncated header");
  const std::string header = bytes.substr(header_start, header_len);
  std::smatch m;
  if (!std::regex_search(header, m, std::regex(R"('descr'\s*:\s*'([^']*)')"))) throw Error(where + "header has no descr");
  const std::string descr = m[1];
  if (std::regex_search(header, std::regex(R"('fortran_order'\s*:\s*True)"))) throw Error(where + "Fortran-order arrays are not supported");
  if (!std::regex_search(header, m, std::regex(R"('shape'\s*:\s*\(([^)]*)\))"))) throw Error(where + "header has no shape");
  std::vector<int64_t> dims;
  const std::string shape = m[1];
  const std::regex number(R"(\d+)");
  for (std::sregex_iterator it(shape.begin(), shape.end(), number), end; it != end; ++it)
    dims.push_back(std::stoll(it->str()));
  DType dtype = DType::Undefined;
  for (const auto& t : kTypes)
    if (descr == t.descr) dtype = t.dtype;
  if (dtype == DType::Undefined) throw Error(where + "unsupported dtype '" + descr + "'");
  HostTensor t(dtype, dims);
  const size_t data_start = header_start + header_len;
  if (bytes.size() - data_start != t.nbytes())
    throw Error(where + "holds " + std::to_string(bytes.size() - data_start) + " data bytes, " +
                std::to_string(t.nbytes()) + " expected for " + t.shape_string());
  if (t.nbytes()) std::memcpy(t.mutable_raw(), bytes.data() + data_start, t.nbytes());
  return t;
}

void write_npy(const std::filesystem::path& path, const HostTensor& t) {
  const char* descr = nullptr;
  for (const auto& k : kTypes)
    if (k.dtype == t.dtype()) descr = k.descr;
  if (!descr) throw Error(path.string() + ": cannot write dtype " + dtype_name(t.dtype()) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i) shape += std::to_string(t.dims()[i]) + (t.rank() == 1 || i + 1 < t.rank() ? "," : "");
  shape += ")";
  std::string header = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');  // pad so the data starts 64-byte aligned
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  out += header;
  AtomicFile f(path);
  f.write(out);
  f.write(t.raw(), t.nbytes());
  f.commit();
}

}  // namespace geopt
