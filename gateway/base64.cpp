#include "gateway/base64.h"

#include <cstdint>

namespace ember::gateway {

void AppendBase64(std::string_view bytes, std::string* out) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out->reserve(out->size() + (bytes.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const std::uint32_t v = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16 |
                            std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8 |
                            std::uint32_t{static_cast<unsigned char>(bytes[i + 2])};
    out->push_back(kAlphabet[v >> 18 & 63]);
    out->push_back(kAlphabet[v >> 12 & 63]);
    out->push_back(kAlphabet[v >> 6 & 63]);
    out->push_back(kAlphabet[v & 63]);
  }
  const std::size_t rest = bytes.size() - i;
  if (rest == 0) return;
  std::uint32_t v = std::uint32_t{static_cast<unsigned char>(bytes[i])} << 16;
  if (rest == 2) v |= std::uint32_t{static_cast<unsigned char>(bytes[i + 1])} << 8;
  out->push_back(kAlphabet[v >> 18 & 63]);
  out->push_back(kAlphabet[v >> 12 & 63]);
  out->push_back(rest == 2 ? kAlphabet[v >> 6 & 63] : '=');
  out->push_back('=');
}

}  // namespace ember::gateway
