// Writes a float vector as a JSON array by hand. Each value is the shortest
// decimal that reads back as the same float32 (std::to_chars), which is both
// exact and about half the size of printing the value as a double, as a JSON
// library would after widening it.
#ifndef EMBER_GATEWAY_JSON_FLOATS_H_
#define EMBER_GATEWAY_JSON_FLOATS_H_

#include <span>
#include <string>

namespace ember::gateway {

// Appends one value, or "[v0,v1,...]". Throw HttpError 500 for NaN or infinity, which JSON
// cannot express (a model that produces them is broken).
void AppendFloat(float value, std::string* out);
void AppendFloatArray(std::span<const float> values, std::string* out);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_JSON_FLOATS_H_
