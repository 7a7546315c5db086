#include "client/similarity_command.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <span>

#include "client/client.h"
#include "client/ctl_failure.h"

namespace ember::ctl {
namespace {

// Cosine of two vectors of the same length, in double; 0 when either is all zeros.
double Cosine(std::span<const float> a, std::span<const float> b) {
  double dot = 0, na = 0, nb = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    dot += double{a[i]} * b[i];
    na += double{a[i]} * a[i];
    nb += double{b[i]} * b[i];
  }
  return na > 0 && nb > 0 ? dot / std::sqrt(na * nb) : 0.0;
}

struct Request {
  std::string model, query;
  std::vector<std::string> texts;
  bool json = false;
};

void Run(const std::vector<std::string>& routers, int timeout_ms, const Request& r) {
  Client client(routers, {});
  std::vector<std::string> all{r.query};
  all.insert(all.end(), r.texts.begin(), r.texts.end());
  const Embeddings e =
      client.Embed(r.model, all, {.timeout = std::chrono::milliseconds(timeout_ms)});
  std::vector<double> cosine(r.texts.size());
  for (std::size_t i = 0; i < r.texts.size(); ++i) cosine[i] = Cosine(e[0], e[i + 1]);
  std::vector<std::size_t> order(r.texts.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return cosine[a] > cosine[b]; });
  if (r.json) {
    nlohmann::json out = {{"model", e.model()},
                          {"version", e.version()},
                          {"query", r.query},
                          {"results", nlohmann::json::array()}};
    for (std::size_t i : order) {
      out["results"].push_back({{"index", i}, {"text", r.texts[i]}, {"cosine", cosine[i]}});
    }
    std::cout << out.dump() << "\n";
    return;
  }
  std::printf("model %s version %u, cosine to \"%s\", nearest first:\n", e.model().c_str(),
              e.version(), r.query.c_str());
  for (std::size_t i : order) std::printf("  %+.4f  %s\n", cosine[i], r.texts[i].c_str());
}

}  // namespace

void AddSimilarityCommand(CLI::App& app, const std::vector<std::string>& routers,
                          const int& timeout_ms) {
  auto request = std::make_shared<Request>();
  auto* cmd = app.add_subcommand(
      "similarity",
      "embed a query and texts; print each text's cosine to the query, nearest first");
  cmd->add_option("model", request->model, "model name")->required();
  cmd->add_option("query", request->query, "the text to compare the others with")->required();
  cmd->add_option("texts", request->texts, "texts to rank")->required();
  cmd->add_flag("--json", request->json, "print JSON");
  cmd->callback([request, &routers, &timeout_ms] {
    ReportingFailure([&] { Run(routers, timeout_ms, *request); });
  });
}

}  // namespace ember::ctl
