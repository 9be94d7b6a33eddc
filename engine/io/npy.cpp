#include "io/npy.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "util/atomic_file.h"
#include "util/checked_size.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt {
namespace {

struct NpyType {
  const char* descr;
  DType dtype;
};

constexpr NpyType kTypes[] = {
    {"<f4", DType::F32},
    {"<f8", DType::F64},
    {"<f2", DType::F16},
    {"<i8", DType::I64},
    {"<i4", DType::I32},
    {"<i2", DType::I16},
    {"|i1", DType::I8},
    {"|u1", DType::U8},
    {"<u2", DType::U16},
    {"<u4", DType::U32},
    {"<u8", DType::U64},
    {"|b1", DType::Bool},
    // NumPy has no bfloat16: bf16 is written as its bit patterns, '<u2' (view them as
    // ml_dtypes.bfloat16), and read from '<u2' where bf16 is expected (as_declared_dtype)
    // or from a 2-byte void array ('<V2', '|V2'), as array libraries without the type save it.
    {"<V2", DType::BF16},
    {"|V2", DType::BF16},
};

// The header's dict literal, as NumPy writes it: {'descr': '<f4', 'fortran_order':
// False, 'shape': (2, 3), } (either quote, any spacing, trailing commas). A bounded,
// linear scan: no regex, no recursion, every number range-checked.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& where) : s_(text), where_(where) {}

  void parse(std::string& descr, bool& fortran, std::vector<int64_t>& shape, bool& has_shape) {
    skip();
    expect('{');
    bool has_descr = false;
    while (true) {
      skip();
      if (peek() == '}') break;
      const std::string key = string_literal();
      skip();
      expect(':');
      skip();
      if (key == "descr") {
        descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order") {
        fortran = boolean();
      } else if (key == "shape") {
        shape = tuple();
        has_shape = true;
      } else {
        fail("unexpected key '" + key + "' (a .npy header holds descr, fortran_order and shape)");
      }
      skip();
      if (peek() == ',')
        ++i_;
      else if (peek() != '}')
        fail("expected ',' or '}'");
    }
    if (!has_descr) fail("no 'descr'");
    if (!has_shape) fail("no 'shape'");
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(where_ + "bad .npy header at byte " + std::to_string(i_) + ": " + what);
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  void skip() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string string_literal() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("expected a quoted string");
    const size_t start = ++i_;
    while (i_ < s_.size() && s_[i_] != q) ++i_;
    if (i_ >= s_.size()) fail("unterminated string");
    return s_.substr(start, i_++ - start);
  }
  bool boolean() {
    if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
    if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
    fail("expected True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (true) {
      skip();
      if (peek() == ')') break;
      if (peek() == '-') fail("negative dimension in 'shape'");
      if (peek() < '0' || peek() > '9') fail("expected a dimension (a non-negative integer)");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{peek() - '0'}, &v))
          fail("a dimension does not fit in 64 bits");
        ++i_;
      }
      dims.push_back(v);
      skip();
      if (peek() == ',')
        ++i_;
      else if (peek() != ')')
        fail("expected ',' or ')' in 'shape'");
    }
    ++i_;
    return dims;
  }

  const std::string& s_;
  const std::string& where_;
  size_t i_ = 0;
};

// A header this long is no array's (NumPy's own are under 4 KiB): refused before it is read.
constexpr size_t kMaxHeaderBytes = size_t{1} << 20;

}  // namespace

HostTensor read_npy(const std::filesystem::path& path) {
  const std::string where = path.string() + ": ";
  InputFile in(path);
  char prefix[12] = {};
  if (in.read(prefix, 10) < 10 || std::memcmp(prefix, "\x93NUMPY", 6) != 0)
    throw Error(where + "not a .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  size_t header_len = 0, header_start = 10;
  if (major == 1) {
    header_len = static_cast<unsigned char>(prefix[8]) |
                 (static_cast<size_t>(static_cast<unsigned char>(prefix[9])) << 8);
  } else if (major == 2 || major == 3) {
    if (in.read(prefix + 10, 2) < 2) throw Error(where + "truncated header");
    for (int i = 3; i >= 0; --i)
      header_len = (header_len << 8) | static_cast<unsigned char>(prefix[8 + static_cast<size_t>(i)]);
    header_start = 12;
  } else {
    throw Error(where + "unsupported .npy version " + std::to_string(major));
  }
  if (header_len > kMaxHeaderBytes)
    throw Error(where + "its header claims " + std::to_string(header_len) +
                " bytes, more than geopt reads (" + std::to_string(kMaxHeaderBytes) + ")");
  std::string header(header_len, '\0');
  if (in.read(header.data(), header_len) != header_len) throw Error(where + "truncated header");
  std::string descr;
  bool fortran = false, has_shape = false;
  std::vector<int64_t> dims;
  HeaderParser(header, where).parse(descr, fortran, dims, has_shape);
  if (fortran) throw Error(where + "Fortran-order arrays are not supported");
  DType dtype = DType::Undefined;
  for (const auto& t : kTypes)
    if (descr == t.descr) dtype = t.dtype;
  if (dtype == DType::Undefined) throw Error(where + "unsupported dtype '" + descr + "'");
  // Sizes checked before anything is allocated: the file must hold exactly that many bytes.
  const size_t want = checked_byte_count(checked_element_count(dims, where + "its shape"), dtype_size(dtype),
                                         where + "its shape " + dims_text(dims));
  std::error_code ec;
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  const uintmax_t data_start = header_start + header_len;
  if (ec || file_size < data_start || file_size - data_start != want)
    throw Error(where + "holds " + std::to_string(ec || file_size < data_start ? 0 : file_size - data_start) +
                " data bytes, " + std::to_string(want) + " expected for shape " + dims_text(dims) + " of " +
                dtype_name(dtype));
  HostTensor t(dtype, dims);
  if (t.nbytes() && in.read(t.mutable_raw(), t.nbytes()) != t.nbytes())
    throw Error(where + "cannot read its data");
  return t;
}

std::string npy_file_name(const std::string& value_name) {
  std::string s;
  for (char c : value_name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.') ? c : '_';
  return s + ".npy";
}

std::map<std::string, std::string> npy_file_names(const std::vector<std::string>& value_names) {
  std::vector<std::string> names = value_names;
  std::sort(names.begin(), names.end());
  std::map<std::string, std::string> out;
  std::map<std::string, int> taken;  // file name -> values that map to it so far
  for (const auto& name : names) {
    if (out.count(name)) continue;
    const std::string plain = npy_file_name(name);
    const int n = ++taken[plain];
    out[name] = n == 1 ? plain : plain.substr(0, plain.size() - 4) + "~" + std::to_string(n) + ".npy";
  }
  return out;
}

std::vector<std::string> write_npy_folder(
    const std::filesystem::path& folder,
    const std::vector<std::pair<std::string, const HostTensor*>>& tensors) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  const auto files = npy_file_names(names);
  std::vector<std::string> renamed;
  for (const auto& [name, file] : files)
    if (file != npy_file_name(name))
      renamed.push_back("'" + name + "' is written as " + file + " (" + npy_file_name(name) +
                        " is another value's)");
  std::error_code ec;
  // A target that cannot be replaced (a folder of that name) is found before anything is
  // written: the renames below then only fail where the file system itself fails.
  for (const auto& [name, file] : files) {
    const auto st = fs::symlink_status(folder / file, ec);
    if (!ec && fs::exists(st) && !fs::is_regular_file(st))
      throw Error((folder / file).string() + ": cannot write output '" + name +
                  "' there (not a regular file); nothing was written");
  }
  fs::create_directories(folder, ec);
  if (ec) throw Error(folder.string() + ": cannot create the folder: " + ec.message());
  std::string pattern = (folder / ".geopt-XXXXXX").string();
  if (!::mkdtemp(pattern.data()))
    throw Error(folder.string() + ": cannot write into the folder: " + std::strerror(errno));
  const fs::path staging = pattern;
  struct RemoveStaging {
    fs::path p;
    ~RemoveStaging() {
      std::error_code ignored;
      fs::remove_all(p, ignored);
    }
  } cleanup{staging};
  for (const auto& [name, t] : tensors) write_npy(staging / files.at(name), *t);
  for (const auto& [name, t] : tensors) {
    fs::rename(staging / files.at(name), folder / files.at(name), ec);
    if (ec) throw Error((folder / files.at(name)).string() + ": cannot write: " + ec.message());
  }
  return renamed;
}

std::map<std::string, HostTensor> read_npy_folder(const std::filesystem::path& folder) {
  std::error_code ec;
  if (!std::filesystem::is_directory(folder, ec)) throw Error(folder.string() + ": not a folder");
  std::map<std::string, HostTensor> out;
  for (const auto& e : std::filesystem::directory_iterator(folder))
    if (e.path().extension() == ".npy") out[e.path().stem().string()] = read_npy(e.path());
  return out;
}

HostTensor as_declared_dtype(HostTensor t, DType declared) {
  if (t.dtype() == DType::U16 && declared == DType::BF16) {
    HostTensor bits(DType::BF16, t.dims());
    if (t.nbytes()) std::memcpy(bits.mutable_raw(), t.raw(), t.nbytes());
    return bits;
  }
  return t;
}

void write_npy(const std::filesystem::path& path, const HostTensor& t) {
  const char* descr = t.dtype() == DType::BF16 ? "<u2" : nullptr;
  for (const auto& k : kTypes)
    if (!descr && k.dtype == t.dtype()) descr = k.descr;
  if (!descr) throw Error(path.string() + ": cannot write dtype " + dtype_name(t.dtype()) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < t.rank(); ++i)
    shape += std::to_string(t.dims()[i]) + (t.rank() == 1 || i + 1 < t.rank() ? "," : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
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
