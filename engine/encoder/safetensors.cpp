#include "engine/encoder/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <utility>

namespace ember::engine {
namespace {

// Real headers are a few tens of KiB; anything beyond this is corruption.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

[[noreturn]] void Fail(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error("safetensors file " + path.string() + ": " + what);
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

SafeTensorInfo ParseEntry(const std::filesystem::path& path, const std::string& name,
                          const nlohmann::json& j, uint64_t data_size) {
  auto bad = [&](const std::string& what) { Fail(path, "tensor '" + name + "': " + what); };
  if (!j.is_object()) bad("header entry is not an object");
  SafeTensorInfo info;

  auto dt = j.find("dtype");
  if (dt == j.end() || !dt->is_string()) bad("missing or non-string \"dtype\"");
  info.dtype = dt->get<std::string>();
  const size_t elem = SafeTensorsDTypeSize(info.dtype);
  if (elem == 0) bad("unknown dtype '" + info.dtype + "'");

  auto sh = j.find("shape");
  if (sh == j.end() || !sh->is_array()) bad("missing or non-array \"shape\"");
  uint64_t numel = 1;
  for (const auto& d : *sh) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) bad("shape entries must be integers >= 0");
    const auto v = d.get<uint64_t>();
    if (v != 0 && numel > std::numeric_limits<uint64_t>::max() / v / elem) bad("shape overflows");
    numel *= v;
    info.shape.push_back(static_cast<int64_t>(v));
  }

  auto off = j.find("data_offsets");
  if (off == j.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned()) {
    bad("\"data_offsets\" must be [begin, end] with unsigned integers");
  }
  info.begin = (*off)[0].get<uint64_t>();
  info.end = (*off)[1].get<uint64_t>();
  if (info.begin > info.end) bad("data_offsets begin > end");
  if (info.end > data_size) {
    bad("data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
        ") exceed the data section of " + std::to_string(data_size) + " bytes (file truncated?)");
  }
  if (info.end - info.begin != numel * elem) {
    bad("has " + std::to_string(info.end - info.begin) + " bytes but dtype " + info.dtype +
        " x shape needs " + std::to_string(numel * elem));
  }
  return info;
}

}  // namespace

int64_t SafeTensorInfo::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

size_t SafeTensorsDTypeSize(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL" || dtype == "F8_E4M3" ||
      dtype == "F8_E5M2") {
    return 1;
  }
  return 0;
}

SafeTensorsFile SafeTensorsFile::Open(const std::filesystem::path& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) Fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) Fail(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail(path, "not a regular file");
  const auto file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    Fail(path, "file is " + std::to_string(file_size) + " bytes, too short for a header");
  }

  SafeTensorsFile f;
  f.path_ = path;
  f.map_size_ = static_cast<size_t>(file_size);
  void* m = ::mmap(nullptr, f.map_size_, PROT_READ, MAP_PRIVATE, fd.get(), 0);
  if (m == MAP_FAILED) Fail(path, std::string("mmap failed: ") + std::strerror(errno));
  f.map_ = m;
  const auto* bytes = static_cast<const unsigned char*>(m);

  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | bytes[i];  // little-endian
  if (header_len > kMaxHeaderBytes || header_len > file_size - 8) {
    Fail(path, "header length " + std::to_string(header_len) + " does not fit in a file of " +
                   std::to_string(file_size) + " bytes (truncated or not safetensors)");
  }
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(bytes + 8, bytes + 8 + header_len);
  } catch (const nlohmann::json::exception& e) {
    Fail(path, std::string("malformed JSON header: ") + e.what());
  }
  if (!header.is_object()) Fail(path, "JSON header is not an object");

  const uint64_t data_size = file_size - 8 - header_len;
  f.data_ = reinterpret_cast<const std::byte*>(bytes + 8 + header_len);
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) Fail(path, "\"__metadata__\" is not an object");
      for (const auto& [k, v] : entry.items()) {
        f.metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
      }
      continue;
    }
    f.tensors_.emplace(name, ParseEntry(path, name, entry, data_size));
  }
  // Hint the kernel: weights are read once, front to back.
  ::madvise(f.map_, f.map_size_, MADV_SEQUENTIAL);
  return f;
}

SafeTensorsFile::SafeTensorsFile(SafeTensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      data_(std::exchange(other.data_, nullptr)),
      tensors_(std::move(other.tensors_)),
      metadata_(std::move(other.metadata_)) {}

SafeTensorsFile& SafeTensorsFile::operator=(SafeTensorsFile&& other) noexcept {
  if (this != &other) {
    Unmap();
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    data_ = std::exchange(other.data_, nullptr);
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

SafeTensorsFile::~SafeTensorsFile() { Unmap(); }

void SafeTensorsFile::Unmap() noexcept {
  if (map_ != nullptr) ::munmap(map_, map_size_);
  map_ = nullptr;
  map_size_ = 0;
  data_ = nullptr;
}

const SafeTensorInfo* SafeTensorsFile::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const SafeTensorInfo& SafeTensorsFile::at(const std::string& name) const {
  const SafeTensorInfo* info = find(name);
  if (info == nullptr) Fail(path_, "missing tensor '" + name + "'");
  return *info;
}

void SafeTensorsFile::Release(const SafeTensorInfo& info) const {
  if (info.nbytes() == 0) return;
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto first = reinterpret_cast<uintptr_t>(data(info)) & ~(page - 1);
  const auto last = reinterpret_cast<uintptr_t>(data(info)) + info.nbytes();
  // Advice only: a failure leaves the pages mapped, which costs memory, not correctness.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

}  // namespace ember::engine
