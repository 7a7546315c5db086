#include "engine/encoder/checkpoint.h"

#include <set>
#include <stdexcept>

#include "engine/encoder/config_json.h"

namespace ember::engine {

namespace fs = std::filesystem;

Checkpoint Checkpoint::Open(const fs::path& dir) {
  Checkpoint c;
  std::vector<fs::path> files;
  if (const fs::path single = dir / "model.safetensors"; fs::exists(single)) {
    c.path_ = single;
    files.push_back(single);
  } else if (const fs::path index = dir / "model.safetensors.index.json"; fs::exists(index)) {
    c.path_ = index;
    const config_json::Json j = config_json::Read(index);
    const auto map = j.find("weight_map");
    if (!j.is_object() || map == j.end() || !map->is_object() || map->empty()) {
      config_json::Fail(index.string() + ": no weight_map of tensor names to shard files");
    }
    std::set<std::string> names;
    for (const auto& [tensor, shard] : map->items()) {
      if (!shard.is_string() || shard.get<std::string>().find('/') != std::string::npos) {
        config_json::Fail(index.string() + ": weight_map[\"" + tensor +
                          "\"] must name a file beside the index");
      }
      names.insert(shard.get<std::string>());
    }
    for (const std::string& name : names) files.push_back(dir / name);
  } else {
    throw std::runtime_error("missing " + (dir / "model.safetensors").string() +
                             " (nor a sharded model.safetensors.index.json beside it)");
  }
  for (const fs::path& file : files) {
    if (!fs::exists(file)) {
      throw std::runtime_error(c.path_.string() + " names the shard " + file.filename().string() +
                               ", which is missing");
    }
    c.files_.push_back(SafeTensorsFile::Open(file));
    for (const auto& [name, info] : c.files_.back().tensors()) {
      if (!c.index_.emplace(name, c.files_.size() - 1).second) {
        throw std::runtime_error(c.path_.string() + ": tensor '" + name + "' is in both " +
                                 c.files_[c.index_.at(name)].path().filename().string() + " and " +
                                 file.filename().string());
      }
    }
  }
  return c;
}

Checkpoint::Tensor Checkpoint::at(const std::string& name) const {
  const auto it = index_.find(name);
  if (it == index_.end()) {
    if (files_.size() == 1) files_[0].at(name);  // throws, naming the file as it always has
    throw std::runtime_error("sharded checkpoint " + path_.string() + ": missing tensor '" + name +
                             "'");
  }
  const SafeTensorsFile& file = files_[it->second];
  return {&file, &file.at(name)};
}

std::uint64_t Checkpoint::bytes() const {
  std::uint64_t n = 0;
  for (const SafeTensorsFile& f : files_) {
    for (const auto& [name, info] : f.tensors()) n += info.nbytes();
  }
  return n;
}

}  // namespace ember::engine
