#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "builtin_rules.h"
#include "teller/core/regex.h"
#include "teller/reconstruct/reconstruct.h"

namespace teller::reconstruct {

struct Classifier::Rule {
  Layer layer;
  std::string category_glob;  // "*" or an exact category, or a prefix ending in '*'
  // POSIX extended (core/regex.h): several times faster than std::regex on long kernel
  // names, which matters because every distinct name is tried against the rules once.
  std::shared_ptr<const Regex> name;
};

Classifier::~Classifier() = default;

namespace {

bool GlobMatches(const std::string& glob, std::string_view text) {
  if (glob == "*") return true;
  if (!glob.empty() && glob.back() == '*') {
    return text.substr(0, glob.size() - 1) == std::string_view(glob).substr(0, glob.size() - 1);
  }
  return text == glob;
}

}  // namespace

Result<std::shared_ptr<Classifier>> Classifier::FromText(std::string_view text,
                                                         const std::string& source) {
  auto classifier = std::shared_ptr<Classifier>(new Classifier());
  std::istringstream in{std::string(text)};
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream fields(line);
    std::string layer_text, glob, pattern;
    fields >> layer_text >> glob;
    std::getline(fields, pattern);
    const size_t p = pattern.find_first_not_of(" \t");
    pattern = p == std::string::npos ? "" : pattern.substr(p);
    while (!pattern.empty() && (pattern.back() == '\r' || pattern.back() == ' '))
      pattern.pop_back();
    Layer layer;
    const std::string where = source + ":" + std::to_string(line_no) + ": ";
    // HOST is the layer of every runtime/driver call, never a rule's choice.
    if (!ParseLayer(layer_text, &layer) || layer == Layer::kHostCall) {
      return Status::Error(where + "unknown layer '" + layer_text +
                           "' (expected STEP, FRONTEND, BACKEND, COMM, GPU or MARK)");
    }
    if (glob.empty() || pattern.empty()) {
      return Status::Error(where + "expected LAYER CATEGORY-GLOB NAME-REGEX");
    }
    Result<Regex> re = Regex::Compile(pattern);
    if (!re.ok()) return Status::Error(where + re.status().message());
    classifier->rules_.push_back(
        {layer, glob, std::make_shared<const Regex>(std::move(re).value())});
  }
  return classifier;
}

Result<std::shared_ptr<Classifier>> Classifier::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::Error("cannot open classification rules " + path);
  std::stringstream text;
  text << in.rdbuf();
  return FromText(text.str(), path);
}

std::shared_ptr<Classifier> Classifier::BuiltIn() {
  auto result = FromText(kBuiltInRules, "built-in classify.rules");
  // The built-in text is tested; a failure here is a build defect.
  return result.ok() ? result.value() : std::shared_ptr<Classifier>(new Classifier());
}

Layer Classifier::Classify(EventType type, std::string_view category, std::string_view name) const {
  if (IsHostCall(type)) return Layer::kHostCall;
  const bool gpu = IsGpuWork(type) || type == EventType::kSync || type == EventType::kGpuAnnotation;
  Layer layer = gpu ? Layer::kGpu : (type == EventType::kMark ? Layer::kMark : Layer::kFrontend);
  for (const Rule& rule : rules_) {
    if (!GlobMatches(rule.category_glob, category)) continue;
    if (!rule.name->Matches(name)) continue;
    // GPU work only takes the COMM layer from rules (a kernel is never a STEP).
    if (gpu && rule.layer != Layer::kComm) continue;
    if (type == EventType::kMark && rule.layer != Layer::kMark) continue;
    if (!gpu && type != EventType::kMark && rule.layer == Layer::kMark) continue;
    layer = rule.layer;
    break;
  }
  return layer;
}

Layer LayerCache::Of(size_t event) {
  const EventType type = trace_.events.type[event];
  if (IsHostCall(type)) return Layer::kHostCall;
  const StringId name = trace_.events.name[event];
  const StringId category = trace_.events.category[event];
  const bool gpu = IsGpuWork(type) || type == EventType::kSync || type == EventType::kGpuAnnotation;
  // Host ranges and GPU work of one name may take different layers; marks follow host rules.
  const uint64_t key = ((static_cast<uint64_t>(category) << 32) | name) ^
                       (gpu ? 0x8000000000000000ull : 0) ^
                       (type == EventType::kMark ? 0x4000000000000000ull : 0);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  const Layer layer =
      classifier_.Classify(type, trace_.strings.Get(category), trace_.strings.Get(name));
  cache_.emplace(key, layer);
  return layer;
}

}  // namespace teller::reconstruct
