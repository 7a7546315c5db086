#include "worker/model_repository.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "common/config_file.h"
#include "worker/worker_settings.h"

namespace ember::worker {
namespace {

namespace fs = std::filesystem;

std::optional<std::uint32_t> ParseVersion(std::string_view text) {
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v == 0) return std::nullopt;
  return v;
}

// Model names travel in requests and become paths here: keep them to one
// plain directory name.
bool ValidName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of("/\\") == std::string::npos && name.find('\0') == std::string::npos;
}

}  // namespace

VersionPolicy VersionPolicy::Parse(const std::string& text) {
  VersionPolicy p;
  auto count = [&](std::string_view digits) {
    const auto v = ParseVersion(digits);
    if (!v) throw std::invalid_argument("version policy '" + text + "': bad number");
    return *v;
  };
  if (text == "latest") return p;
  if (text == "all") {
    p.kind = Kind::kAll;
    return p;
  }
  if (text.starts_with("latest:")) {
    p.latest = count(std::string_view(text).substr(7));
    return p;
  }
  if (text.starts_with("versions:")) {
    p.kind = Kind::kSpecific;
    std::string_view rest = std::string_view(text).substr(9);
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      p.versions.push_back(count(rest.substr(0, comma)));
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
    if (p.versions.empty())
      throw std::invalid_argument("version policy '" + text + "': no versions");
    return p;
  }
  throw std::invalid_argument("version policy '" + text +
                              "': expected latest, latest:N, all or versions:A,B");
}

std::string VersionPolicy::ToString() const {
  switch (kind) {
    case Kind::kLatest:
      return latest == 1 ? "latest" : "latest:" + std::to_string(latest);
    case Kind::kAll:
      return "all";
    case Kind::kSpecific: {
      std::string s = "versions:";
      for (std::size_t i = 0; i < versions.size(); ++i) {
        s += (i ? "," : "") + std::to_string(versions[i]);
      }
      return s;
    }
  }
  return "latest";
}

std::vector<std::uint32_t> VersionPolicy::Select(
    const std::vector<std::uint32_t>& available) const {
  switch (kind) {
    case Kind::kLatest: {
      const std::size_t n = std::min(latest, available.size());
      return {available.end() - static_cast<std::ptrdiff_t>(n), available.end()};
    }
    case Kind::kAll:
      return available;
    case Kind::kSpecific: {
      std::vector<std::uint32_t> out;
      for (std::uint32_t v : available) {
        if (std::ranges::find(versions, v) != versions.end()) out.push_back(v);
      }
      return out;
    }
  }
  return {};
}

void ResolveByDevice(const std::string& device, BatcherOptions* batcher) {
  const bool gpu = device.starts_with("cuda");
  if (batcher->max_batch_size == 0) batcher->max_batch_size = gpu ? kGpuBatchTexts : kCpuBatchTexts;
  if (batcher->max_batch_tokens == 0) {
    batcher->max_batch_tokens = gpu ? kGpuBatchTokens : kCpuBatchTokens;
  }
}

ModelRepository::ModelRepository(fs::path root, VersionPolicy policy, BatcherOptions defaults,
                                 engine::BackendOptions load_defaults)
    : root_(std::move(root)),
      policy_(std::move(policy)),
      batcher_defaults_(std::move(defaults)),
      load_defaults_(std::move(load_defaults)) {
  if (!root_.empty() && !fs::is_directory(root_)) {
    throw std::runtime_error("model repository '" + root_.string() + "' is not a directory");
  }
}

void ModelRepository::AddFixed(std::string name, std::uint32_t version, fs::path path,
                               BatcherOptions batcher) {
  if (!ValidName(name)) throw std::invalid_argument("bad model name '" + name + "'");
  fixed_[std::move(name)] = {version, std::move(path), std::move(batcher)};
}

std::vector<std::string> ModelRepository::Fixed() const {
  std::vector<std::string> names;
  for (const auto& [name, fixed] : fixed_) names.push_back(name);
  return names;
}

std::string ModelRepository::Describe() const {
  if (!root_.empty()) return "repository " + root_.string();
  return fixed_.empty() ? "this worker's models (it has no --repository)"
                        : "this worker's --model list (it has no --repository)";
}

std::vector<std::string> ModelRepository::Models() const {
  std::vector<std::string> names;
  std::error_code ec;
  if (!root_.empty()) {
    for (const auto& entry : fs::directory_iterator(root_, ec)) {
      const std::string name = entry.path().filename().string();
      if (entry.is_directory() && ValidName(name) && !name.starts_with(".")) names.push_back(name);
    }
  }
  for (const auto& [name, fixed] : fixed_) {
    if (std::ranges::find(names, name) == names.end()) names.push_back(name);
  }
  std::ranges::sort(names);
  return names;
}

std::vector<std::uint32_t> ModelRepository::Versions(const std::string& model) const {
  if (auto f = fixed_.find(model); f != fixed_.end()) return {f->second.version};
  std::vector<std::uint32_t> versions;
  if (!ValidName(model) || root_.empty()) return versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / model, ec)) {
    if (!entry.is_directory()) continue;
    if (const auto v = ParseVersion(entry.path().filename().string())) versions.push_back(*v);
  }
  std::ranges::sort(versions);
  return versions;
}

VersionPolicy ModelRepository::PolicyFor(const std::string& model) const {
  if (fixed_.contains(model)) return VersionPolicy::Parse("all");  // it has one version
  const fs::path file = root_ / model / "config.toml";
  if (root_.empty() || !ValidName(model) || !fs::exists(file)) return policy_;
  const toml::table t = config::ParseFile(file);
  config::CheckKeys(t, {"version-policy"}, file);
  std::string text = policy_.ToString();
  config::ReadString(t, "version-policy", &text, file);
  try {
    return VersionPolicy::Parse(text);
  } catch (const std::invalid_argument& e) {
    config::Bad(file, "version-policy", e.what());
  }
}

namespace {

// A config.toml value passed to the backend as text: strings as they are, numbers and
// booleans as TOML writes them.
std::string ParameterText(const toml::node& node, const fs::path& file, std::string_view key) {
  if (const auto s = node.value_exact<std::string>()) return *s;
  if (const auto b = node.value_exact<bool>()) return *b ? "true" : "false";
  if (const auto i = node.value_exact<std::int64_t>()) return std::to_string(*i);
  if (const auto d = node.value_exact<double>()) return settings::RealLiteral(*d);
  config::Bad(file, key, "a backend parameter must be a string, number or boolean");
}

}  // namespace

ModelSpec ModelRepository::Spec(const std::string& model, std::uint32_t version) const {
  if (!ValidName(model)) throw std::runtime_error("bad model name '" + model + "'");
  ModelSpec spec{model, version, {}, load_defaults_, batcher_defaults_};
  if (auto f = fixed_.find(model); f != fixed_.end()) {
    if (version != f->second.version) {
      throw std::runtime_error("model '" + model + "' has only version " +
                               std::to_string(f->second.version) + " (--model)");
    }
    spec.path = f->second.path;
    spec.batcher = f->second.batcher;
  } else {
    const fs::path dir = root_ / model / std::to_string(version);
    if (root_.empty() || !fs::is_directory(dir)) {
      throw std::runtime_error("model '" + model + "' version " + std::to_string(version) +
                               " is not in " + Describe());
    }
    spec.path = dir;
    const fs::path file = dir / "config.toml";
    if (fs::exists(file)) {
      const toml::table t = config::ParseFile(file);
      // What the serving side knows: the backend, the path, the batcher. The rest is the
      // backend's to judge.
      const std::vector<std::string> batcher_keys = BatcherSettings().Keys();
      for (const auto& [key, node] : t) {
        const std::string_view k = key.str();
        if (k == "backend" || k == "path" ||
            std::ranges::find(batcher_keys, k) != batcher_keys.end()) {
          continue;
        }
        spec.load.params.Set(std::string(k), ParameterText(node, file, k));
      }
      config::ReadString(t, "backend", &spec.load.backend, file);
      if (!engine::IsBackendName(spec.load.backend)) {
        config::Bad(file, "backend", "expected one of " + engine::BackendNames());
      }
      std::string path;
      config::ReadString(t, "path", &path, file);
      if (!path.empty()) {
        // Relative to the version directory, and inside it.
        const fs::path inner = fs::path(path).lexically_normal();
        if (inner.is_absolute() || inner.empty() || *inner.begin() == "..") {
          config::Bad(file, "path", "must be a relative path inside " + dir.string());
        }
        spec.path = dir / inner;
      }
      BatcherSettings().Read(t, &spec.batcher, file);
    }
  }
  ResolveByDevice(spec.load.device, &spec.batcher);
  return spec;
}

std::vector<std::pair<std::string, std::uint32_t>> StartupLoads(
    const ModelRepository& repository, const std::vector<std::string>& requested) {
  std::vector<std::pair<std::string, std::uint32_t>> loads;
  for (const auto& model : repository.Fixed())
    loads.emplace_back(model, repository.Versions(model).at(0));
  auto by_policy = [&](const std::string& model) {
    const auto versions = repository.Versions(model);
    if (versions.empty()) {
      throw std::invalid_argument("model '" + model + "' has no versions in " +
                                  repository.root().string());
    }
    for (std::uint32_t v : repository.PolicyFor(model).Select(versions))
      loads.emplace_back(model, v);
  };
  if (requested.empty()) {
    if (repository.root().empty()) return loads;
    for (const auto& model : repository.Models()) {
      if (!repository.IsFixed(model) && !repository.Versions(model).empty()) by_policy(model);
    }
    return loads;
  }
  for (const auto& text : requested) {
    const auto colon = text.find(':');
    const std::string model = text.substr(0, colon);
    if (colon == std::string::npos) {
      by_policy(model);
      continue;
    }
    const auto version = ParseVersion(std::string_view(text).substr(colon + 1));
    if (!version) throw std::invalid_argument("--load '" + text + "': bad version");
    loads.emplace_back(model, *version);
  }
  return loads;
}

}  // namespace ember::worker
