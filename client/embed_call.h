// What the SDK's two clients (client.h, async_client.h) share of one embedding call: the
// request body they send and how they read the router's answer, so that both send the same
// request and accept or refuse the same replies with the same errors.
#ifndef EMBER_CLIENT_EMBED_CALL_H_
#define EMBER_CLIENT_EMBED_CALL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"
#include "common/error_code.h"
#include "common/messages.h"

namespace ember::embed_call {

// The task of an Embed with `options` (EmbedOptions::output).
protocol::Task EmbedTask(const EmbedOptions& options);

// The encoded EmbedRequest for `texts` with `model` and `options` (its timeout is also the
// router's deadline for it).
std::string EncodeRequest(std::string_view model, std::vector<std::string> texts,
                          const EmbedOptions& options);
// The same for a tokenization (Client::Tokenize).
std::string EncodeTokenizeRequest(std::string_view model, std::vector<std::string> texts,
                                  const EmbedOptions& options);
// The same for a decode (Client::Decode): each sequence of ids as one input, its ids in decimal
// separated by spaces.
std::string EncodeDecodeRequest(std::string_view model,
                                const std::vector<std::vector<std::uint32_t>>& ids,
                                const EmbedOptions& options);
// The same for a score (Client::Score): `pairs` empty, or one per text.
std::string EncodeScoreRequest(std::string_view model, std::vector<std::string> texts,
                               std::vector<std::string> pairs, const EmbedOptions& options);

// An ERROR reply's body as the Error it names; INTERNAL if it cannot be read.
Error ErrorOf(std::string_view body);

// A REPLY body to a request of `texts` texts for `task`, as the caller gets it. Throws Error
// (INTERNAL) if it cannot be read, holds another number of vectors, or is not the task's (a
// worker from before scores or tokenize embeds the texts: the reply then has no labels or
// tokens).
Embeddings EmbeddingsOf(std::string_view body, std::size_t texts, int attempts, std::string router,
                        protocol::Task task);

}  // namespace ember::embed_call

#endif  // EMBER_CLIENT_EMBED_CALL_H_
