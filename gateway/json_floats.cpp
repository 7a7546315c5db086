#include "gateway/json_floats.h"

#include <charconv>
#include <cmath>

#include "gateway/http_error.h"

namespace ember::gateway {

void AppendFloatArray(std::span<const float> values, std::string* out) {
  out->push_back('[');
  char buffer[32];
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (!std::isfinite(values[i])) {
      throw HttpError(500, "server_error", "INTERNAL", "the model produced a non-finite value");
    }
    if (i > 0) out->push_back(',');
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), values[i]);
    out->append(buffer, result.ptr);
  }
  out->push_back(']');
}

}  // namespace ember::gateway
