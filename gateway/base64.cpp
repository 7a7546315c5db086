#include "gateway/base64.h"

#include <cstdint>

namespace ember::gateway {

void AppendBase64(std::string_view bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const std::size_t start = out->size();
  out->resize(start + (bytes.size() + 2) / 3 * 4);
  char* o = out->data() + start;  // written in place: a push_back per character cost 5% of
                                  // the gateway's CPU at one text per request
  const auto byte = [&](std::size_t k) {
    return std::uint32_t{static_cast<unsigned char>(bytes[k])};
  };
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    *o++ = kAlphabet[v >> 18 & 63];
    *o++ = kAlphabet[v >> 12 & 63];
    *o++ = kAlphabet[v >> 6 & 63];
    *o++ = kAlphabet[v & 63];
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return;
  std::uint32_t v = byte(i) << 16;
  if (rest == 2) v |= byte(i + 1) << 8;
  *o++ = kAlphabet[v >> 18 & 63];
  *o++ = kAlphabet[v >> 12 & 63];
  *o++ = rest == 2 ? kAlphabet[v >> 6 & 63] : '=';
  *o = '=';
}

}  // namespace ember::gateway
