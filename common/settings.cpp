#include "common/settings.h"

#include <cstdio>

namespace ember::settings {

std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string RealLiteral(double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.15g", value);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // n: nan / inf
  return s;
}

std::string Comment(std::string_view text) {
  std::string out;
  while (!text.empty()) {
    const auto newline = text.find('\n');
    const std::string_view line = text.substr(0, newline);
    out += line.empty() ? "#\n" : "# " + std::string(line) + "\n";
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return out;
}

}  // namespace ember::settings
