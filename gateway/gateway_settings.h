// The gateway's settings, each declared once (common/settings.h): flag, TOML key, range and
// comment; RenderGatewayConfig() is config/gateway.toml.
#ifndef EMBER_GATEWAY_GATEWAY_SETTINGS_H_
#define EMBER_GATEWAY_GATEWAY_SETTINGS_H_

#include <filesystem>
#include <string>

#include "common/settings.h"
#include "gateway/gateway.h"

namespace ember::gateway {

struct GatewayConfig {
  GatewayOptions gateway;
  std::string listen = "127.0.0.1:8080";  // host:port, [v6]:port or :port; port 0: any free
  std::string log_level = "info";
};

const settings::Table<GatewayConfig>& GatewaySettings();

// Reads a gateway TOML file into *config; throws std::runtime_error naming the file and key.
void LoadGatewayConfig(const std::filesystem::path& path, GatewayConfig* config);

// Splits `listen` into host and port; false when it is not host:port.
bool ParseListen(const std::string& listen, std::string* host, int* port);

// config/gateway.toml: every setting with its comment, as shipped.
std::string RenderGatewayConfig();

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_GATEWAY_SETTINGS_H_
