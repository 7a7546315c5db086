#include "client/tokenize_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "client/ctl_failure.h"

namespace ember::ctl {
namespace {

struct Request {
  std::string model;
  std::vector<std::string> texts;
  bool no_truncate = false, json = false;
};

void Run(const std::vector<std::string>& routers, int timeout_ms, const Request& r) {
  Client client(routers, {});
  const Embeddings t = client.Tokenize(
      r.model, r.texts,
      {.truncate = !r.no_truncate, .timeout = std::chrono::milliseconds(timeout_ms)});
  nlohmann::json out = nlohmann::json::array();
  std::size_t k = 0;
  for (std::size_t i = 0; i < t.size() && i < t.tokens().size(); ++i) {
    if (!r.json) std::printf("%s\n", r.texts[i].c_str());
    nlohmann::json list = nlohmann::json::array();
    for (std::uint32_t n = 0; n < t.tokens()[i]; ++n, ++k) {
      const std::uint32_t start = t.token_spans()[2 * k], stop = t.token_spans()[2 * k + 1];
      if (r.json) {
        list.push_back({{"id", t.token_ids()[k]},
                        {"piece", t.token_pieces()[k]},
                        {"start", start},
                        {"stop", stop}});
      } else {
        std::printf("  %6u  %-16s %u-%u\n", t.token_ids()[k], t.token_pieces()[k].c_str(), start,
                    stop);
      }
    }
    out.push_back(std::move(list));
  }
  if (r.json)
    std::cout << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, const std::vector<std::string>& routers,
                        const int& timeout_ms) {
  auto request = std::make_shared<Request>();
  auto* cmd = app.add_subcommand(
      "tokenize", "print a model's tokens of each text: id, piece and the bytes it came from");
  cmd->add_option("model", request->model, "model name")->required();
  cmd->add_option("texts", request->texts, "texts to tokenize")->required();
  cmd->add_flag("--no-truncate", request->no_truncate,
                "fail with TOO_LONG instead of cutting at the model's length");
  cmd->add_flag("--json", request->json, "print JSON: one list of tokens per text");
  cmd->callback([request, &routers, &timeout_ms] {
    ReportingFailure([&] { Run(routers, timeout_ms, *request); });
  });
}

}  // namespace ember::ctl
