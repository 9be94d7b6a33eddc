#pragma once
// Immutable byte storage for constant tensors. Weights are referenced, never
// copied: a Buffer either owns bytes moved out of a protobuf field or maps a
// file (ONNX external data). Tensors hold a shared slice of one.
#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

namespace geopt {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual std::span<const std::byte> bytes() const = 0;
};

// Owns a std::string's bytes (moved in, O(1)).
class StringBuffer final : public Buffer {
 public:
  explicit StringBuffer(std::string bytes) : bytes_(std::move(bytes)) {}
  std::span<const std::byte> bytes() const override {
    return {reinterpret_cast<const std::byte*>(bytes_.data()), bytes_.size()};
  }

 private:
  std::string bytes_;
};

// Bytes another owner keeps alive (a computed tensor's storage handed over, not copied).
class SharedBytes final : public Buffer {
 public:
  SharedBytes(std::shared_ptr<const void> keep, const std::byte* data, size_t size)
      : keep_(std::move(keep)), data_(data), size_(size) {}
  std::span<const std::byte> bytes() const override { return {data_, size_}; }

 private:
  std::shared_ptr<const void> keep_;
  const std::byte* data_;
  size_t size_;
};

// A whole file mapped read-only; pages load on first touch.
class MappedFile final : public Buffer {
 public:
  // Throws geopt::Error naming the path when the file cannot be opened or mapped.
  explicit MappedFile(const std::filesystem::path& path);
  ~MappedFile() override;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const std::byte> bytes() const override { return {data_, size_}; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// A shared window [offset, offset+size) into a Buffer.
class BufferSlice {
 public:
  BufferSlice() = default;
  BufferSlice(std::shared_ptr<const Buffer> owner, size_t offset, size_t size);
  explicit BufferSlice(std::string bytes);  // convenience: own these bytes

  std::span<const std::byte> bytes() const;
  size_t size() const { return size_; }
  const std::shared_ptr<const Buffer>& owner() const { return owner_; }

 private:
  std::shared_ptr<const Buffer> owner_;
  size_t offset_ = 0;
  size_t size_ = 0;
};

}  // namespace geopt
