// A model's weights as its folder holds them: one model.safetensors, or the shards that
// model.safetensors.index.json lists (its weight_map, tensor name -> file), as transformers'
// save_pretrained writes a model past its max_shard_size (Qwen3-Embedding-4B / 8B,
// e5-mistral-7b-instruct). Every file is memory-mapped (safetensors.h); a tensor is read from
// whichever holds it. No LibTorch.
#ifndef EMBER_ENGINE_ENCODER_CHECKPOINT_H_
#define EMBER_ENGINE_ENCODER_CHECKPOINT_H_

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "engine/encoder/safetensors.h"

namespace ember::engine {

class Checkpoint {
 public:
  // The tensor `name`: the file that holds it and its entry there.
  struct Tensor {
    const SafeTensorsFile* file;
    const SafeTensorInfo* info;
  };

  // Opens dir/model.safetensors, else every shard dir/model.safetensors.index.json names. Throws
  // std::runtime_error naming the file at fault: none of the two, a shard missing or not named
  // in the index's weight_map, one tensor in two shards, or what SafeTensorsFile::Open refuses.
  static Checkpoint Open(const std::filesystem::path& dir);

  bool contains(const std::string& name) const { return index_.count(name) != 0; }
  // Throws std::runtime_error naming the tensor and the checkpoint if absent.
  Tensor at(const std::string& name) const;
  // The file to name in messages: model.safetensors or the index.
  const std::filesystem::path& path() const { return path_; }
  std::size_t shards() const { return files_.size(); }
  // Bytes of tensor data in all files.
  std::uint64_t bytes() const;

 private:
  std::filesystem::path path_;
  std::vector<SafeTensorsFile> files_;
  std::map<std::string, std::size_t> index_;  // tensor name -> files_ index
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_CHECKPOINT_H_
