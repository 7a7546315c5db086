// A tokenizer failure as the wire's error code: TOO_LONG for a text over the limit (truncation
// off), BAD_REQUEST for the rest (bad UTF-8, an id outside the vocabulary, ...). For the worker,
// which tokenizes; header-only, as the tokenizer library itself knows nothing of ember's error
// codes.
#ifndef EMBER_ENGINE_TOKENIZER_TOKENIZER_ERROR_CODE_H_
#define EMBER_ENGINE_TOKENIZER_TOKENIZER_ERROR_CODE_H_

#include "common/error_code.h"
#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

inline ErrorCode ErrorCodeOf(const TokenizerError& e) {
  return e.code() == TokenizerErrorCode::kTooLong ? ErrorCode::kTooLong : ErrorCode::kBadRequest;
}

}  // namespace ember::engine

#endif  // EMBER_ENGINE_TOKENIZER_TOKENIZER_ERROR_CODE_H_
