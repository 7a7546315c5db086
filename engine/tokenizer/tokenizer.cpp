#include "engine/tokenizer/tokenizer.h"

namespace ember::engine {

const char* TokenizerErrorCodeName(TokenizerErrorCode code) {
  switch (code) {
    case TokenizerErrorCode::kBadUtf8:
      return "kBadUtf8";
    case TokenizerErrorCode::kTooLong:
      return "kTooLong";
    case TokenizerErrorCode::kIo:
      return "kIo";
    case TokenizerErrorCode::kBadConfig:
      return "kBadConfig";
  }
  return "unknown";
}

TokenizerError::TokenizerError(TokenizerErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

}  // namespace ember::engine
