#include "gateway/client_pool.h"

namespace ember::gateway {

ClientPool::Lease::~Lease() {
  if (client_) pool_->Release(std::move(client_));
}

ClientPool::Lease ClientPool::Acquire() {
  {
    std::lock_guard lock(mutex_);
    if (!idle_.empty()) {
      std::unique_ptr<Client> client = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(client));
    }
  }
  // Connecting is lazy in ZeroMQ, so this is cheap and needs no lock.
  return Lease(this, std::make_unique<Client>(endpoints_, ClientOptions{}));
}

std::size_t ClientPool::idle() const {
  std::lock_guard lock(mutex_);
  return idle_.size();
}

void ClientPool::Release(std::unique_ptr<Client> client) {
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(client));
}

}  // namespace ember::gateway
