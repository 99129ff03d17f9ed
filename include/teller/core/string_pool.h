// Interned strings with 32-bit ids. Every stage after collection passes names as ids
// from one pool; id 0 is always the empty string. Views returned by Get() stay valid
// for the lifetime of the pool (storage is block-allocated and never moves).
#ifndef TELLER_CORE_STRING_POOL_H_
#define TELLER_CORE_STRING_POOL_H_

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace teller {

using StringId = uint32_t;

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;

  StringId Intern(std::string_view text);
  // The id of `text` if it was interned, else nullopt-like kNotFound.
  static constexpr StringId kNotFound = UINT32_MAX;
  StringId Find(std::string_view text) const;
  std::string_view Get(StringId id) const { return views_[id]; }
  size_t size() const { return views_.size(); }

 private:
  std::string_view Store(std::string_view text);

  std::vector<std::unique_ptr<char[]>> blocks_;        // shared blocks; the last is filling
  std::vector<std::unique_ptr<char[]>> large_blocks_;  // one per large string
  size_t block_used_ = 0;
  size_t block_size_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, StringId> ids_;
};

}  // namespace teller

#endif  // TELLER_CORE_STRING_POOL_H_
