#include "teller/core/string_pool.h"

#include <cstring>

namespace teller {
namespace {
constexpr size_t kBlockBytes = 1 << 20;
}

StringPool::StringPool() {
  views_.emplace_back();
  ids_.emplace(std::string_view(), 0);
}

std::string_view StringPool::Store(std::string_view text) {
  if (text.size() > kBlockBytes / 4) {
    // Large strings get a block of their own so they do not waste a shared one.
    large_blocks_.push_back(std::make_unique<char[]>(text.size()));
    std::memcpy(large_blocks_.back().get(), text.data(), text.size());
    return {large_blocks_.back().get(), text.size()};
  }
  if (blocks_.empty() || block_used_ + text.size() > block_size_) {
    blocks_.push_back(std::make_unique<char[]>(kBlockBytes));
    block_size_ = kBlockBytes;
    block_used_ = 0;
  }
  char* dst = blocks_.back().get() + block_used_;
  std::memcpy(dst, text.data(), text.size());
  block_used_ += text.size();
  return {dst, text.size()};
}

StringId StringPool::Intern(std::string_view text) {
  auto it = ids_.find(text);
  if (it != ids_.end()) return it->second;
  const std::string_view stored = Store(text);
  const auto id = static_cast<StringId>(views_.size());
  views_.push_back(stored);
  ids_.emplace(stored, id);
  return id;
}

StringId StringPool::Find(std::string_view text) const {
  auto it = ids_.find(text);
  return it == ids_.end() ? kNotFound : it->second;
}

}  // namespace teller
