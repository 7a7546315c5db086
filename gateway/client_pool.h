// ember::Client objects for the gateway's control threads (status for /health and
// /v1/models; embeddings go through its AsyncClient).
//
// A Client owns a ZeroMQ socket, which only one thread may use at a time, so
// threads never share one: each takes a Client from the pool for the length
// of one HTTP request and gives it back afterwards. The pool grows to the
// number of requests that ever ran at once (at most the control thread count),
// and never blocks.
#ifndef EMBER_GATEWAY_CLIENT_POOL_H_
#define EMBER_GATEWAY_CLIENT_POOL_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "client/client.h"

namespace ember::gateway {

class ClientPool {
 public:
  explicit ClientPool(std::vector<std::string> endpoints) : endpoints_(std::move(endpoints)) {}

  // A Client on loan; returned to the pool when the lease ends, unless
  // Discard() was called (after the router went silent, a fresh socket is
  // better than one with requests queued for a router that may be gone).
  class Lease {
   public:
    Lease(ClientPool* pool, std::unique_ptr<Client> client)
        : pool_(pool), client_(std::move(client)) {}
    ~Lease();
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    Client& operator*() const { return *client_; }
    Client* operator->() const { return client_.get(); }
    void Discard() { client_.reset(); }

   private:
    ClientPool* pool_;
    std::unique_ptr<Client> client_;
  };

  Lease Acquire();

  // Clients idle in the pool (for tests and metrics).
  std::size_t idle() const;

 private:
  void Release(std::unique_ptr<Client> client);

  const std::vector<std::string> endpoints_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Client>> idle_;
};

}  // namespace ember::gateway

#endif  // EMBER_GATEWAY_CLIENT_POOL_H_
