// Standard base64 (RFC 4648, with padding), as OpenAI's
// encoding_format="base64" uses for little-endian float32 vectors: a quarter
// of the bytes of decimal JSON numbers and no float formatting cost.
#ifndef EMBER_GATEWAY_BASE64_H_
#define EMBER_GATEWAY_BASE64_H_

#include <string>
#include <string_view>

namespace ember::gateway {

void AppendBase64(std::string_view bytes, std::string* out);

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_BASE64_H_
