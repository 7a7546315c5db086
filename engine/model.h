// A model version as the worker serves it: the tokenizer that makes its ids and the backend
// that runs batches of them. Neither knows of the other; the worker owns both and hands the
// one's ids to the other (engine/backend_factory.h opens them together).
#ifndef EMBER_ENGINE_MODEL_H_
#define EMBER_ENGINE_MODEL_H_

#include <memory>

#include "engine/backend.h"
#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

struct Model {
  std::unique_ptr<const Tokenizer> tokenizer;
  std::unique_ptr<Backend> backend;
};

}  // namespace ember::engine

#endif  // EMBER_ENGINE_MODEL_H_
