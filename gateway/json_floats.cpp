#include "gateway/json_floats.h"

#include <charconv>
#include <cmath>

#include "gateway/http_error.h"

namespace ember::gateway {

void AppendFloat(float value, std::string* out) {
  if (!std::isfinite(value)) {
    throw HttpError(500, "server_error", "INTERNAL", "the model produced a non-finite value");
  }
  char buffer[32];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  out->append(buffer, result.ptr);
}

void AppendFloatArray(std::span<const float> values, std::string* out) {
  out->push_back('[');
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendFloat(values[i], out);
  }
  out->push_back(']');
}

}  // namespace ember::gateway
