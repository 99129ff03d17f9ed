// Failure signatures of serving logs (docs/logs.md, "Log signatures"): text rules that name
// what a log line reports (CUDA out of memory, NCCL watchdog timeout, Xid, KV-cache
// preemption, engine death, ...) and the fault category it stands for. The rules are data,
// share/teller/log_signatures.rules, built into Teller and replaceable by a user's file of
// the same form; diagnose's failure findings are made from them.
#ifndef TELLER_LOGS_SIGNATURES_H_
#define TELLER_LOGS_SIGNATURES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/vocabulary.h"

namespace teller::logs {

struct Signature {
  std::string id;  // "cuda_oom": lines of one id make one finding
  FaultCategory category = FaultCategory::kSchedulingSoftware;
  // True: a finding of this signature is at most a warning, whatever the line's level.
  bool warning_only = false;
  std::string title;
  std::string why;
};

// Immutable once built, so one set may serve many traces and threads.
class SignatureSet {
 public:
  static constexpr int kNoSignature = -1;

  // The signatures built into Teller (the text of share/teller/log_signatures.rules).
  static std::shared_ptr<const SignatureSet> BuiltIn();
  // Errors name `source` (or the path) and the line.
  static Result<std::shared_ptr<const SignatureSet>> FromText(std::string_view text,
                                                              const std::string& source);
  static Result<std::shared_ptr<const SignatureSet>> FromFile(const std::string& path);

  // The signature of the first rule (in file order) that `message` matches, or
  // kNoSignature. One pass over the message whatever the number of rules.
  int Match(std::string_view message) const;

  size_t size() const { return signatures_.size(); }
  const Signature& at(size_t i) const { return signatures_[i]; }

 private:
  struct Rule {
    uint32_t signature;
    std::string needle;
    std::string also;  // "" = none
    bool at_start;
  };
  void Index();
  static size_t Pair(char a, char b) {
    return static_cast<size_t>(static_cast<unsigned char>(a)) << 8 | static_cast<unsigned char>(b);
  }

  std::vector<Signature> signatures_;
  std::vector<Rule> rules_;
  // Rules by the first two bytes of their needle: rows_[begin_[pair] .. begin_[pair + 1])
  // in file order.
  std::vector<uint32_t> begin_;
  std::vector<uint32_t> rows_;
};

}  // namespace teller::logs

#endif  // TELLER_LOGS_SIGNATURES_H_
