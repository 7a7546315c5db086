// Minimal, validating reader for the safetensors format
// (https://huggingface.co/docs/safetensors): an 8-byte little-endian header
// length N, N bytes of JSON {"name": {"dtype", "shape", "data_offsets"}, ...,
// "__metadata__": {...}}, then the raw tensor bytes. Offsets are relative to the
// end of the header.
//
// The file is memory-mapped read-only; TensorView::data points into the mapping
// and stays valid as long as the SafeTensorsFile lives. No LibTorch dependency.
// Tensor bytes are little-endian as written by the format; ember only targets
// little-endian hosts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ember::engine {

struct SafeTensorInfo {
  std::string dtype;           // as in the file: "F32", "F16", "BF16", "I64", ...
  std::vector<int64_t> shape;  // empty for scalars
  uint64_t begin = 0;          // byte offsets into the data section
  uint64_t end = 0;

  int64_t numel() const;
  uint64_t nbytes() const { return end - begin; }
};

// Size in bytes of one element of a safetensors dtype; 0 if unknown.
size_t SafeTensorsDTypeSize(const std::string& dtype);

class SafeTensorsFile {
 public:
  // Maps and validates `path`. Throws std::runtime_error naming the file (and the
  // tensor, where one is at fault) if it is missing, truncated, has a malformed
  // header, offsets outside the data section, or a byte count that does not match
  // dtype x shape.
  static SafeTensorsFile Open(const std::filesystem::path& path);

  SafeTensorsFile(SafeTensorsFile&& other) noexcept;
  SafeTensorsFile& operator=(SafeTensorsFile&& other) noexcept;
  SafeTensorsFile(const SafeTensorsFile&) = delete;
  SafeTensorsFile& operator=(const SafeTensorsFile&) = delete;
  ~SafeTensorsFile();

  const std::filesystem::path& path() const { return path_; }
  bool contains(const std::string& name) const { return tensors_.count(name) != 0; }
  // nullptr if absent.
  const SafeTensorInfo* find(const std::string& name) const;
  // Throws std::runtime_error naming the file and the tensor if absent.
  const SafeTensorInfo& at(const std::string& name) const;
  // Pointer to the first byte of the tensor's data (inside the mapping; may be
  // unaligned).
  const std::byte* data(const SafeTensorInfo& info) const { return data_ + info.begin; }
  // Drops the mapping's pages of this tensor from the process (madvise MADV_DONTNEED; they stay
  // in the page cache, and reading the tensor again faults them back in): a loader that has
  // copied a tensor out calls it, so that a model's resident memory is its loaded form and not
  // that plus every file page it read. Pages shared with a neighbour are dropped too (harmless:
  // the mapping is read-only).
  void Release(const SafeTensorInfo& info) const;
  const std::map<std::string, SafeTensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafeTensorsFile() = default;
  void Unmap() noexcept;

  std::filesystem::path path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  const std::byte* data_ = nullptr;  // start of the data section
  std::map<std::string, SafeTensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace ember::engine
