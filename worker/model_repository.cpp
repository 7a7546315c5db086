#include "worker/model_repository.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "common/config_file.h"
#include "worker/worker_config.h"

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

ModelRepository::ModelRepository(fs::path root, VersionPolicy policy, BatcherOptions defaults,
                                 LoadOptions load_defaults)
    : root_(std::move(root)),
      policy_(std::move(policy)),
      batcher_defaults_(std::move(defaults)),
      load_defaults_(std::move(load_defaults)) {
  if (!fs::is_directory(root_)) {
    throw std::runtime_error("model repository '" + root_.string() + "' is not a directory");
  }
}

std::vector<std::string> ModelRepository::Models() const {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_, ec)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_directory() && ValidName(name) && !name.starts_with(".")) names.push_back(name);
  }
  std::ranges::sort(names);
  return names;
}

std::vector<std::uint32_t> ModelRepository::Versions(const std::string& model) const {
  std::vector<std::uint32_t> versions;
  if (!ValidName(model)) return versions;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / model, ec)) {
    if (!entry.is_directory()) continue;
    if (const auto v = ParseVersion(entry.path().filename().string())) versions.push_back(*v);
  }
  std::ranges::sort(versions);
  return versions;
}

VersionPolicy ModelRepository::PolicyFor(const std::string& model) const {
  const fs::path file = root_ / model / "config.toml";
  if (!ValidName(model) || !fs::exists(file)) return policy_;
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

ModelSpec ModelRepository::Spec(const std::string& model, std::uint32_t version) const {
  if (!ValidName(model)) throw std::runtime_error("bad model name '" + model + "'");
  const fs::path dir = root_ / model / std::to_string(version);
  if (!fs::is_directory(dir)) {
    throw std::runtime_error("model '" + model + "' version " + std::to_string(version) +
                             " is not in repository " + root_.string());
  }
  ModelSpec spec{model, version, dir, load_defaults_, batcher_defaults_};
  const fs::path file = dir / "config.toml";
  if (!fs::exists(file)) return spec;
  const toml::table t = config::ParseFile(file);
  config::CheckKeys(
      t,
      {"backend", "path", "pooling", "normalize", "max-length", "precision", "max-batch-size",
       "max-queue-delay-us", "max-batch-tokens", "max-queue", "preferred-batch-sizes"},
      file);
  config::ReadString(t, "backend", &spec.load.backend, file);
  if (spec.load.backend != "auto" && spec.load.backend != "bert" &&
      spec.load.backend != "torchscript") {
    config::Bad(file, "backend", "expected auto, bert or torchscript");
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
  std::string pooling = "auto";
  config::ReadString(t, "pooling", &pooling, file);
  if (pooling == "mean") {
    spec.load.pooling = Pooling::kMean;
  } else if (pooling == "cls") {
    spec.load.pooling = Pooling::kCls;
  } else if (pooling != "auto") {
    config::Bad(file, "pooling", "expected auto, mean or cls");
  }
  if (const toml::node* n = t.get("normalize")) {
    const auto v = n->value<bool>();
    if (!v) config::Bad(file, "normalize", "expected true or false");
    spec.load.normalize = *v;
  }
  config::ReadInt(t, "max-length", &spec.load.max_length, 2, 1'000'000, file);
  std::string precision = "fp32";
  config::ReadString(t, "precision", &precision, file);
  const auto parsed = ParsePrecision(precision);
  if (!parsed) config::Bad(file, "precision", "expected fp32, bf16, fp16 or int8");
  // Whether the device / backend can run it is checked by the load itself (BertModel::Load,
  // LoadBackend), which fails with the reason: fp16 needs CUDA, int8 needs CPU, TorchScript
  // only fp32.
  spec.load.precision = *parsed;
  ReadBatcher(t, &spec.batcher, file);
  return spec;
}

std::vector<std::pair<std::string, std::uint32_t>> StartupLoads(
    const ModelRepository& repository, const std::vector<std::string>& requested) {
  std::vector<std::pair<std::string, std::uint32_t>> loads;
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
    for (const auto& model : repository.Models()) {
      if (!repository.Versions(model).empty()) by_policy(model);
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
