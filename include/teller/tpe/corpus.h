// Training and encoding input for TPE: the step records of a dataset built by
// `teller dataset build` (docs/dataset-format.md): DIR/<setting>/steps.jsonl, one step per
// line with its labels and node columns (type tag, name id, parent, depth, dur_ns, ...),
// names interned in DIR/<setting>/names.json.
//
// Steps are held as columns over all steps (offsets delimit them), already serialized in
// depth-first order (docs/method.md §5), with every node's symbol, "<tag> <normalized name>"
// (symbols.h), interned in a corpus-local table in first-seen order. Model ids are
// assigned later: by the trainer's alphabet, or by a trained model.
#ifndef TELLER_TPE_CORPUS_H_
#define TELLER_TPE_CORPUS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/tpe/sequence.h"
#include "teller/tpe/symbols.h"

namespace teller::tpe {

// Where one step came from: its setting and its labels in steps.jsonl.
struct StepInfo {
  uint32_t setting = 0;  // index into Corpus::settings
  std::string request;
  uint32_t step = 0;  // the step's index in its request (trace.json "step")
  uint64_t seq = 0;   // the engine step
  bool is_anomaly = false;
};

struct Corpus {
  std::vector<std::string> settings;      // setting names (directory names)
  std::vector<std::string> setting_dirs;  // their paths
  // The corpus-local symbol table: text and type tag per local symbol id.
  std::vector<std::string> symbol_text;
  std::vector<TypeTag> symbol_tag;
  // Node columns over all steps, each step in depth-first order: step k is
  // [offsets[k], offsets[k + 1]). parent is local to the step (-1 for a root).
  std::vector<TokenId> symbol;  // local symbol id
  std::vector<int32_t> parent;
  std::vector<int64_t> duration;
  std::vector<uint16_t> depth;
  std::vector<uint32_t> node;  // the node id in the step record (trace.json "id")
  std::vector<uint64_t> offsets{0};
  std::vector<StepInfo> steps;
  uint64_t reordered_steps = 0;  // steps whose stored order was not depth-first

  size_t num_steps() const { return steps.size(); }
  size_t num_nodes() const { return symbol.size(); }
  // The columns of step k, with `ids` in place of the local symbols when given (a
  // per-node column over the whole corpus, e.g. model ids).
  TreeView Step(size_t k, const std::vector<TokenId>* ids = nullptr) const;
  // True when step k's node ids are 0..n-1 in order (so positions are node ids).
  bool StepNodesAreIdentity(size_t k) const;
};

struct LoadOptions {
  int threads = 0;  // parser threads; 0 = hardware threads (at most 8)
  // Progress lines (one per setting read); may be empty.
  std::function<void(std::string_view)> progress;
};

// Reads `data`: a dataset root (every sub-directory holding steps.jsonl is a setting, in
// name order) or one setting directory (it holds steps.jsonl). Errors: `data` missing or
// not a directory, no steps.jsonl found, a malformed line (file:line: what), a name id
// outside names.json, no steps at all.
Result<Corpus> LoadCorpus(const std::string& data, const LoadOptions& options);

// The setting directories LoadCorpus would read (same errors for a bad `data`).
Result<std::vector<std::string>> FindSettingDirectories(const std::string& data);

}  // namespace teller::tpe

#endif  // TELLER_TPE_CORPUS_H_
