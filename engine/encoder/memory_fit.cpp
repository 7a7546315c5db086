#include "engine/encoder/memory_fit.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace ember::engine {

ParameterCount CountParameters(const EncoderConfig& c) {
  const int64_t h = c.hidden, qw = c.q_width(), kvw = c.kv_width();
  const int64_t ffn_in = c.gated_ffn ? 2 * c.intermediate : c.intermediate;
  const int64_t dense_per_layer = h * (qw + 2 * kvw) + qw * h + ffn_in * h + c.intermediate * h;
  // Biases (counted as if every projection had them) and two norms of weight and bias; Qwen3's
  // per-head norms.
  const int64_t small_per_layer = (qw + 2 * kvw) + h + ffn_in + h + 4 * h + 2 * c.head_size();
  ParameterCount n;
  n.dense = c.layers * dense_per_layer;
  n.total = n.dense + c.layers * small_per_layer + c.vocab * h + c.type_vocab * h + 4 * h;
  if (c.rope_theta == 0) n.total += c.max_pos * h;
  return n;
}

uint64_t ResidentBytes(const ParameterCount& n, int dense_bytes, int other_bytes) {
  return static_cast<uint64_t>(n.dense) * static_cast<uint64_t>(dense_bytes) +
         static_cast<uint64_t>(n.total - n.dense) * static_cast<uint64_t>(other_bytes);
}

namespace {

// The first number in `path`; nullopt if unreadable or "max".
std::optional<uint64_t> ReadNumber(const std::string& path) {
  std::ifstream in(path);
  uint64_t v = 0;
  if (!(in >> v)) return std::nullopt;
  return v;
}

// This process's cgroup v2 folder ("0::/path" in /proc/self/cgroup).
std::optional<std::string> CgroupFolder() {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("0::", 0) == 0) return "/sys/fs/cgroup" + line.substr(3);
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> AvailableHostMemory() {
  std::optional<uint64_t> available;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib) {
    std::getline(meminfo, unit);
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  if (const auto folder = CgroupFolder()) {
    const auto limit = ReadNumber(*folder + "/memory.max");
    const auto used = ReadNumber(*folder + "/memory.current");
    if (limit && used) {
      const uint64_t left = *limit > *used ? *limit - *used : 0;
      available = available ? std::min(*available, left) : left;
    }
  }
  return available;
}

std::string GiB(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1u << 30));
  return text;
}

}  // namespace ember::engine
