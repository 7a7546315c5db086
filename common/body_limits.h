// Bounds on what one message body may unpack to, so a hostile or corrupt message cannot make
// a decoder allocate (or recurse) without limit. Shared by the full decoders
// (common/messages.cpp) and the router's header read (common/request_header.cpp), which must
// refuse exactly the same bodies.
#ifndef EMBER_COMMON_BODY_LIMITS_H_
#define EMBER_COMMON_BODY_LIMITS_H_

#include <cstddef>

namespace ember::protocol::limits {

inline constexpr std::size_t kArray = 1u << 20;  // elements of one array
inline constexpr std::size_t kMap = 64;          // pairs of one map
inline constexpr std::size_t kStr = 64u << 20;   // bytes of one string
inline constexpr std::size_t kBin = 512u << 20;  // bytes of one bin
inline constexpr std::size_t kExt = 0;           // ext types are never used
inline constexpr std::size_t kDepth = 8;         // nested arrays and maps

}  // namespace ember::protocol::limits

#endif  // EMBER_COMMON_BODY_LIMITS_H_
