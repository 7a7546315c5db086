// Reads a state dict that Python's torch.save wrote (the zip format of PyTorch >= 1.6): its
// tensors by name, e.g. FlagEmbedding's sparse_linear.pt {"weight", "bias"}.
//
// LibTorch's own unpickler (torch::pickle_load) cannot: it reads collections.OrderedDict, the
// type of every nn.Module state dict, as None. This reader runs the pickle opcodes a state dict
// of tensors uses (torch.save's protocol 2: dicts, tuples, strings, numbers, and
// torch._utils._rebuild_tensor_v2 over the zip's storages) and refuses any other global, so no
// code a file names is ever run. The zip is read with LibTorch's PyTorchStreamReader.
#ifndef EMBER_ENGINE_ENCODER_TORCH_STATE_DICT_H_
#define EMBER_ENGINE_ENCODER_TORCH_STATE_DICT_H_

#include <ATen/ATen.h>

#include <filesystem>
#include <map>
#include <string>

namespace ember::engine {

// The file's tensors by name, on the CPU in their stored dtype. Throws std::runtime_error
// naming the file and what in it is unreadable or not a state dict of tensors.
std::map<std::string, at::Tensor> ReadTorchStateDict(const std::filesystem::path& file);

}  // namespace ember::engine

#endif  // EMBER_ENGINE_ENCODER_TORCH_STATE_DICT_H_
