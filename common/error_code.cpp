#include "common/error_code.h"

#include <array>
#include <utility>

namespace ember {
namespace {

constexpr std::array<std::pair<ErrorCode, std::string_view>, 8> kNames = {{
    {ErrorCode::kBadRequest, "BAD_REQUEST"},
    {ErrorCode::kUnknownModel, "UNKNOWN_MODEL"},
    {ErrorCode::kOverloaded, "OVERLOADED"},
    {ErrorCode::kTimeout, "TIMEOUT"},
    {ErrorCode::kUnavailable, "UNAVAILABLE"},
    {ErrorCode::kTooLong, "TOO_LONG"},
    {ErrorCode::kInternal, "INTERNAL"},
    {ErrorCode::kUnauthorized, "UNAUTHORIZED"},
}};

}  // namespace

std::string_view ErrorCodeName(ErrorCode code) {
  for (const auto& [c, name] : kNames) {
    if (c == code) return name;
  }
  return "INTERNAL";
}

std::optional<ErrorCode> ParseErrorCode(std::string_view name) {
  for (const auto& [c, n] : kNames) {
    if (n == name) return c;
  }
  return std::nullopt;
}

}  // namespace ember
