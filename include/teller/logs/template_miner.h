// Log template mining (docs/logs.md): lines become templates, the constant text of a
// message with its variable parts as wildcards ("PacketResponder <*> for block blk_<*>
// terminating"), each with a stable id, so that later stages can count templates per step
// and request and tell new or rare ones from the run's or a baseline's usual ones.
//
// The algorithm follows the published idea of Drain (He et al., "Drain: An Online Log
// Parsing Approach with Fixed Depth Tree", ICWS 2017), written here:
//  1. a message is split into tokens at blanks, and variable parts are masked (MaskMessage);
//  2. a fixed-depth tree routes it by its token count, then by its first `depth - 2` tokens
//     (a token that is a wildcard, or one past `max_children` distinct tokens at a node,
//     goes to the node's wildcard branch);
//  3. in the leaf, the template with the highest share of equal tokens wins when that share
//     reaches `similarity` and no position holds two different names (tokens that start
//     with a capital letter: "NEW" and "RUNNING", "HTTPS" and "SOCKS<*>" name different
//     events); the line then merges into it (positions where they differ become
//     wildcards); otherwise the line starts a new template.
// Lines are added one at a time (streaming); templates only ever gain wildcards, and ids
// never change, so an id handed out stays valid. Templates are saved to a text file and
// loaded again: a baseline's templates reused on an incident keep their ids, lines of the
// incident that fit them get those ids, and new templates get new ids after the last one.
#ifndef TELLER_LOGS_TEMPLATE_MINER_H_
#define TELLER_LOGS_TEMPLATE_MINER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "teller/core/status.h"
#include "teller/core/string_pool.h"

namespace teller::logs {

using TemplateId = uint32_t;
inline constexpr TemplateId kNoTemplate = UINT32_MAX;
// The wildcard of templates and of masked messages.
inline constexpr std::string_view kWildcard = "<*>";

// Masks the variable parts of a message and normalizes its blanks: tokens are runs of
// bytes other than space and tab, written to `out` separated by one space. In a token,
//  - a path (starting with '/', "./" or "~/") or a URL (holding "://") becomes "<*>" whole;
//  - a host with its port ("proxy.example.com:5070"), and a day or month name (Mon..Sun,
//    Jan..Dec: parts of dates) become "<*>";
//  - every run of letters and digits holding a digit (numbers, hex, ids, IP parts) becomes
//    "<*>", keeping the letters in front of the first digit when the run cannot be hex
//    ("SOCKS5" -> "SOCKS<*>", "node129" -> "node<*>", but "e820" -> "<*>"); so does a run
//    of 8 or more hex letters alone ("deadbeef");
//  - masked runs joined only by '.', ':' or '-' become one "<*>" (so "10.0.0.7:5070",
//    "1.13" and "2026-05-12" are one wildcard each).
// Everything else stays as printed: "blk_-6952295868487656571" -> "blk_-<*>",
// "port=11" -> "port=<*>", "(0x0)" -> "(<*>)". `out` is overwritten.
void MaskMessage(std::string_view message, std::string* out);

struct MinerOptions {
  // Depth of the tree, Drain's: the root, the token-count layer and depth - 2 layers of
  // leading tokens (at least 3).
  int depth = 4;
  // Share of equal tokens (in [0, 1]) a line needs with a template to merge into it.
  double similarity = 0.7;
  // Distinct tokens a tree node keeps before further tokens share its wildcard branch.
  int max_children = 100;
};

// Checks the ranges of the options; the error names the option.
Status ValidateOptions(const MinerOptions& options);

// The streaming miner. Not thread-safe; one per log stream (or one shared under a lock).
// Memory: the interned distinct tokens, one short vector of token ids per template and the
// tree's nodes; nothing per line.
class TemplateMiner {
 public:
  // `options` must be valid (ValidateOptions); invalid values are clamped into range.
  explicit TemplateMiner(const MinerOptions& options = {});
  ~TemplateMiner();
  TemplateMiner(TemplateMiner&&) noexcept;
  TemplateMiner& operator=(TemplateMiner&&) noexcept;

  // Adds one line and returns the id of the template it joined or started. A message of
  // blanks only is the empty template (no tokens), which is a template like any other.
  TemplateId Add(std::string_view message);
  // The template `message` would join, without changing anything; kNoTemplate when it
  // would start a new one.
  TemplateId Match(std::string_view message) const;

  size_t size() const;
  // Tokens joined by one space, wildcards as "<*>". `id` < size().
  std::string Text(TemplateId id) const;
  // Lines that joined the template (those of a loaded file included).
  uint64_t Count(TemplateId id) const;
  const MinerOptions& options() const;

  // The templates as text (format in docs/logs.md, "Template files"): a header line with
  // the options, then one line per template in id order.
  std::string Serialize() const;
  // The inverse. Errors name `source` and the line ("f.templates:7: ...").
  static Result<TemplateMiner> Parse(std::string_view text, const std::string& source);
  // Serialize() into a file, written whole or not at all.
  Status Save(const std::string& path) const;
  static Result<TemplateMiner> Load(const std::string& path);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Grouping accuracy of a log parser (Zhu et al., "Tools and Benchmarks for Automated Log
// Parsing", ICSE-SEIP 2019): a line counts as right when the set of lines in its mined
// group equals the set of lines of its true group. `truth[i]` and `mined[i]` are group
// labels of line i (any integers; only equality matters). Returns the share of right
// lines, 1 for no lines; the vectors must be of equal length.
double GroupingAccuracy(const std::vector<uint32_t>& truth, const std::vector<uint32_t>& mined);

}  // namespace teller::logs

#endif  // TELLER_LOGS_TEMPLATE_MINER_H_
