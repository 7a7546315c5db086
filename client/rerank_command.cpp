#include "client/rerank_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "client/client.h"
#include "client/ctl_failure.h"
#include "client/ranking.h"

namespace ember::ctl {
namespace {

struct Request {
  std::string model, query;
  std::vector<std::string> texts;
  std::size_t top_n = 0;
  bool raw_scores = false, no_truncate = false, json = false;
};

void Run(const std::vector<std::string>& routers, int timeout_ms, const Request& r) {
  Client client(routers, {});
  const Embeddings scores =
      client.Score(r.model, std::vector<std::string>(r.texts.size(), r.query), r.texts,
                   {.truncate = !r.no_truncate,
                    .raw_scores = r.raw_scores,
                    .timeout = std::chrono::milliseconds(timeout_ms)});
  const std::vector<Ranked> ranked = RankByScore(scores, r.top_n);
  if (r.json) {
    nlohmann::json out = {{"model", scores.model()},
                          {"version", scores.version()},
                          {"query", r.query},
                          {"results", nlohmann::json::array()}};
    for (const Ranked& x : ranked) {
      out["results"].push_back(
          {{"index", x.index}, {"text", r.texts[x.index]}, {"score", x.score}});
    }
    std::cout << out.dump() << "\n";
    return;
  }
  std::printf("model %s version %u, %s for \"%s\", best first:\n", scores.model().c_str(),
              scores.version(), r.raw_scores ? "logits" : "scores", r.query.c_str());
  for (const Ranked& x : ranked) std::printf("  %+.4f  %s\n", x.score, r.texts[x.index].c_str());
}

}  // namespace

void AddRerankCommand(CLI::App& app, const std::vector<std::string>& routers,
                      const int& timeout_ms) {
  auto request = std::make_shared<Request>();
  auto* cmd = app.add_subcommand(
      "rerank", "score texts against a query with a cross-encoder; print them best first");
  cmd->add_option("model", request->model, "cross-encoder model name")->required();
  cmd->add_option("query", request->query, "the query")->required();
  cmd->add_option("texts", request->texts, "texts to rank")->required();
  cmd->add_option("--top-n", request->top_n, "print only the best N (0: all)");
  cmd->add_flag("--raw-scores", request->raw_scores, "the model's logits, not their sigmoid");
  cmd->add_flag("--no-truncate", request->no_truncate,
                "fail with TOO_LONG instead of truncating a pair");
  cmd->add_flag("--json", request->json, "print JSON");
  cmd->callback([request, &routers, &timeout_ms] {
    ReportingFailure([&] { Run(routers, timeout_ms, *request); });
  });
}

}  // namespace ember::ctl
