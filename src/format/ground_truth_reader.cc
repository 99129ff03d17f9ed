// Reader of ground_truth.json (layout in include/teller/format/ground_truth.h), for
// `teller dataset build`.
//
// simdjson On Demand over the whole file: ground truth is small (a few MB: one record per
// scheduler step, tens of locators per faulty step), so no windowing. The reader is
// strict where the dataset's labels depend on a field (format, version, requests, steps,
// their ids, seq, views, locators: missing or mistyped is an error naming the field's
// path and byte offset) and lenient elsewhere (unknown keys are skipped so that later
// writers can add fields; optional descriptive fields take their defaults; strings that
// mean "none" may be "" or null).
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "simdjson.h"
#include "teller/core/json_reader.h"
#include "teller/format/ground_truth.h"

namespace teller::format {
namespace {

namespace od = simdjson::ondemand;
using simdjson::error_code;

// Version 2 added a fault's "ranks" and material-only labels, version 3 each locator's
// "root"; version 1 and 2 files still read (their locators' roles unknown).
constexpr uint64_t kVersion = 3;
constexpr uint64_t kOldestVersion = 1;

// One parse of one file. Every Parse* returns false after recording the first error;
// callers return false straight away, so the first error is the one reported.
class Reader {
 public:
  Reader(const std::string& path, const simdjson::padded_string& json) : path_(path), json_(json) {}

  Result<GroundTruth> Run();

 private:
  // Field bits for the "missing field" checks of one object.
  struct Seen {
    uint64_t bits = 0;
    // Returns true so that "seen.Set(k) && Get...(...)" marks and reads in one expression.
    bool Set(int i) {
      bits |= uint64_t{1} << i;
      return true;
    }
    bool Has(int i) const { return (bits >> i) & 1; }
  };

  size_t OffsetOf(const char* p) const {
    const char* base = json_.data();
    if (p == nullptr || p < base || p > base + json_.size()) return json_.size();
    return static_cast<size_t>(p - base);
  }
  size_t OffsetOf(od::value& v) { return OffsetOf(v.raw_json_token().data()); }

  bool Fail(size_t offset, const std::string& where, const std::string& what) {
    if (error_.empty()) {
      error_ = path_ + ": byte " + std::to_string(offset) + ": " +
               (where.empty() ? "" : where + ": ") + what;
    }
    return false;
  }
  // A simdjson error while iterating: its location is where the iterator stopped.
  bool FailJson(error_code e, const std::string& where, const std::string& expected) {
    size_t offset = json_.size();
    if (doc_ != nullptr) {
      offset = JsonContext(path_, std::string_view(json_.data(), json_.size()), *doc_).Offset(e);
    } else if (e == simdjson::UNCLOSED_STRING || e == simdjson::UTF8_ERROR) {
      offset = LocateStage1Error(std::string_view(json_.data(), json_.size()), e);
    }
    return Fail(
        offset, where,
        std::string("invalid JSON (") + simdjson::error_message(e) + "), expected " + expected);
  }
  bool Missing(size_t offset, const std::string& where, const char* field) {
    return Fail(offset, where, std::string("missing field \"") + field + "\"");
  }

  // Typed getters: a wrong type is an error at the value's offset.
  bool GetString(od::value& v, const std::string& where, std::string* out, bool null_ok = false);
  bool GetBool(od::value& v, const std::string& where, bool* out);
  bool GetInt(od::value& v, const std::string& where, int64_t lo, int64_t hi, int64_t* out);
  bool GetUint(od::value& v, const std::string& where, uint64_t* out);
  bool GetDouble(od::value& v, const std::string& where, double* out);
  bool GetStrings(od::value& v, const std::string& where, std::vector<std::string>* out);
  bool GetUints(od::value& v, const std::string& where, std::vector<uint64_t>* out);
  template <typename T>
  bool GetIntAs(od::value& v, const std::string& where, T* out) {
    int64_t n = 0;
    if (!GetInt(v, where, static_cast<int64_t>(std::numeric_limits<T>::min()),
                static_cast<int64_t>(std::numeric_limits<T>::max()), &n)) {
      return false;
    }
    *out = static_cast<T>(n);
    return true;
  }

  // Iterates the elements of an array value, calling fn(element, index) -> bool.
  template <typename Fn>
  bool ForEach(od::value& v, const std::string& where, const char* expected, Fn&& fn);
  // Iterates the fields of an object value, calling fn(key, value) -> bool.
  template <typename Fn>
  bool ForFields(od::value& v, const std::string& where, Fn&& fn);

  bool ParseTopology(od::value& v, GroundTruth* t);
  bool ParseProcess(od::value& v, const std::string& where, ProcessTruth* p);
  bool ParseFault(od::value& v, const std::string& where, FaultRecord* f);
  bool ParseRequest(od::value& v, const std::string& where, RequestTruth* r);
  bool ParseStep(od::value& v, const std::string& where, StepTruth* s);
  bool ParseConfounder(od::value& v, const std::string& where, ConfounderRecord* c);
  bool ParseView(od::value& v, const std::string& where, ViewLabel* view);
  bool ParseLocator(od::value& v, const std::string& where, NodeLocator* n);

  const std::string& path_;
  const simdjson::padded_string& json_;
  od::document* doc_ = nullptr;
  std::string error_;
};

bool Reader::GetString(od::value& v, const std::string& where, std::string* out, bool null_ok) {
  if (null_ok && v.is_null()) {
    out->clear();
    return true;
  }
  std::string_view s;
  if (const error_code e = v.get_string().get(s); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE) return FailJson(e, where, "a string");
    return Fail(OffsetOf(v), where, null_ok ? "expected a string or null" : "expected a string");
  }
  out->assign(s);
  return true;
}

bool Reader::GetBool(od::value& v, const std::string& where, bool* out) {
  if (const error_code e = v.get_bool().get(*out); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE) return FailJson(e, where, "true or false");
    return Fail(OffsetOf(v), where, "expected true or false");
  }
  return true;
}

bool Reader::GetInt(od::value& v, const std::string& where, int64_t lo, int64_t hi, int64_t* out) {
  int64_t n = 0;
  if (const error_code e = v.get_int64().get(n); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_OUT_OF_RANGE &&
        e != simdjson::NUMBER_ERROR) {
      return FailJson(e, where, "an integer");
    }
    return Fail(OffsetOf(v), where, "expected an integer");
  }
  if (n < lo || n > hi) {
    return Fail(OffsetOf(v), where,
                "integer " + std::to_string(n) + " out of range [" + std::to_string(lo) + ", " +
                    std::to_string(hi) + "]");
  }
  *out = n;
  return true;
}

bool Reader::GetUint(od::value& v, const std::string& where, uint64_t* out) {
  if (const error_code e = v.get_uint64().get(*out); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_OUT_OF_RANGE &&
        e != simdjson::NUMBER_ERROR) {
      return FailJson(e, where, "an unsigned integer");
    }
    return Fail(OffsetOf(v), where, "expected an unsigned integer");
  }
  return true;
}

bool Reader::GetDouble(od::value& v, const std::string& where, double* out) {
  if (const error_code e = v.get_double().get(*out); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE && e != simdjson::NUMBER_ERROR)
      return FailJson(e, where, "a number");
    return Fail(OffsetOf(v), where, "expected a number");
  }
  return true;
}

template <typename Fn>
bool Reader::ForEach(od::value& v, const std::string& where, const char* expected, Fn&& fn) {
  od::array array;
  if (const error_code e = v.get_array().get(array); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE) return FailJson(e, where, expected);
    return Fail(OffsetOf(v), where, std::string("expected ") + expected);
  }
  size_t index = 0;
  for (auto element : array) {
    od::value item;
    if (const error_code e = element.get(item); e != simdjson::SUCCESS) {
      return FailJson(e, where + "[" + std::to_string(index) + "]", "an array element");
    }
    if (!fn(item, index)) return false;
    ++index;
  }
  return true;
}

template <typename Fn>
bool Reader::ForFields(od::value& v, const std::string& where, Fn&& fn) {
  od::object object;
  if (const error_code e = v.get_object().get(object); e != simdjson::SUCCESS) {
    if (e != simdjson::INCORRECT_TYPE) return FailJson(e, where, "an object");
    return Fail(OffsetOf(v), where, "expected an object");
  }
  for (auto field_result : object) {
    od::field field;
    if (const error_code e = std::move(field_result).get(field); e != simdjson::SUCCESS) {
      return FailJson(e, where, "\"key\": value");
    }
    std::string_view key;
    if (const error_code e = field.unescaped_key().get(key); e != simdjson::SUCCESS) {
      return FailJson(e, where, "a key");
    }
    if (!fn(key, field.value())) return false;
  }
  return true;
}

bool Reader::GetStrings(od::value& v, const std::string& where, std::vector<std::string>* out) {
  return ForEach(v, where, "an array of strings", [&](od::value& item, size_t i) {
    std::string s;
    if (!GetString(item, where + "[" + std::to_string(i) + "]", &s)) return false;
    out->push_back(std::move(s));
    return true;
  });
}

bool Reader::GetUints(od::value& v, const std::string& where, std::vector<uint64_t>* out) {
  return ForEach(v, where, "an array of integers", [&](od::value& item, size_t i) {
    uint64_t n = 0;
    if (!GetUint(item, where + "[" + std::to_string(i) + "]", &n)) return false;
    out->push_back(n);
    return true;
  });
}

bool Reader::ParseTopology(od::value& v, GroundTruth* t) {
  const std::string where = "topology";
  return ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "nodes") return GetIntAs(f, at, &t->nodes);
    if (key == "gpus_per_node") return GetIntAs(f, at, &t->gpus_per_node);
    if (key == "tp") return GetIntAs(f, at, &t->tp);
    if (key == "pp") return GetIntAs(f, at, &t->pp);
    return true;
  });
}

bool Reader::ParseProcess(od::value& v, const std::string& where, ProcessTruth* p) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "host") return seen.Set(0) && GetString(f, at, &p->host);
    if (key == "pid") return seen.Set(1) && GetIntAs(f, at, &p->pid);
    if (key == "rank") return GetIntAs(f, at, &p->rank);
    if (key == "tp_rank") return GetIntAs(f, at, &p->tp_rank);
    if (key == "pp_rank") return GetIntAs(f, at, &p->pp_rank);
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "host");
  if (!seen.Has(1)) return Missing(offset, where, "pid");
  return true;
}

bool Reader::ParseFault(od::value& v, const std::string& where, FaultRecord* fr) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "id") return seen.Set(0) && GetIntAs(f, at, &fr->id);
    if (key == "mechanism") return seen.Set(1) && GetString(f, at, &fr->mechanism);
    if (key == "category") return seen.Set(2) && GetString(f, at, &fr->category);
    if (key == "onset_ns") return GetIntAs(f, at, &fr->onset_ns);
    if (key == "duration_ns") return GetIntAs(f, at, &fr->duration_ns);
    if (key == "magnitude") return GetDouble(f, at, &fr->magnitude);
    if (key == "target") return GetString(f, at, &fr->target, true);
    if (key == "description") return GetString(f, at, &fr->description, true);
    if (key == "ranks") {
      return ForEach(f, at, "an array of ranks", [&](od::value& item, size_t i) {
        fr->ranks.emplace_back();
        return GetIntAs(item, at + "[" + std::to_string(i) + "]", &fr->ranks.back());
      });
    }
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "id");
  if (!seen.Has(1)) return Missing(offset, where, "mechanism");
  if (!seen.Has(2)) return Missing(offset, where, "category");
  return true;
}

bool Reader::ParseConfounder(od::value& v, const std::string& where, ConfounderRecord* c) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "kind") return seen.Set(0) && GetString(f, at, &c->kind);
    if (key == "time_ns") return GetIntAs(f, at, &c->time_ns);
    if (key == "steps") return GetUints(f, at, &c->steps);
    if (key == "requests") return GetStrings(f, at, &c->requests);
    if (key == "detail") return GetString(f, at, &c->detail, true);
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "kind");
  return true;
}

bool Reader::ParseRequest(od::value& v, const std::string& where, RequestTruth* r) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "id") return seen.Set(0) && GetString(f, at, &r->id);
    if (key == "is_fault") return seen.Set(1) && GetBool(f, at, &r->is_fault);
    if (key == "fault_type") return GetString(f, at, &r->fault_type, true);
    if (key == "mechanism") return GetString(f, at, &r->mechanism, true);
    if (key == "fault") return GetIntAs(f, at, &r->fault);
    if (key == "steps") return GetUints(f, at, &r->steps);
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "id");
  if (!seen.Has(1)) return Missing(offset, where, "is_fault");
  return true;
}

bool Reader::ParseLocator(od::value& v, const std::string& where, NodeLocator* n) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  std::string kind;
  size_t kind_offset = offset;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "kind") {
      seen.Set(0);
      kind_offset = OffsetOf(f);
      return GetString(f, at, &kind);
    }
    if (key == "host") return seen.Set(1) && GetString(f, at, &n->host);
    if (key == "pid") return seen.Set(2) && GetIntAs(f, at, &n->pid);
    if (key == "tid") return seen.Set(3) && GetIntAs(f, at, &n->tid);
    if (key == "name") return seen.Set(4) && GetString(f, at, &n->name);
    if (key == "correlation") return seen.Set(5) && GetUint(f, at, &n->correlation);
    if (key == "occurrence") return seen.Set(6) && GetIntAs(f, at, &n->occurrence);
    if (key == "root") {
      bool root = false;
      if (!GetBool(f, at, &root)) return false;
      n->role = root ? NodeLocator::Role::kRoot : NodeLocator::Role::kImpact;
    }
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "kind");
  // Which fields a kind needs (ground_truth.h): range (host pid tid name occurrence),
  // call (host pid correlation), gpu (host pid correlation occurrence).
  static constexpr const char* kNames[] = {"kind", "host",        "pid",       "tid",
                                           "name", "correlation", "occurrence"};
  std::vector<int> needed;
  if (kind == "range") {
    n->kind = NodeLocator::Kind::kRange;
    needed = {1, 2, 3, 4, 6};
  } else if (kind == "call") {
    n->kind = NodeLocator::Kind::kCall;
    needed = {1, 2, 5};
  } else if (kind == "gpu") {
    n->kind = NodeLocator::Kind::kGpu;
    needed = {1, 2, 5, 6};
  } else {
    return Fail(kind_offset, where + ".kind",
                "unknown locator kind \"" + kind + "\" (expected range, call or gpu)");
  }
  for (int i : needed) {
    if (!seen.Has(i)) return Missing(offset, where + " (" + kind + ")", kNames[i]);
  }
  return true;
}

bool Reader::ParseView(od::value& v, const std::string& where, ViewLabel* view) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "is_anomaly") return seen.Set(0) && GetBool(f, at, &view->is_anomaly);
    if (key == "nodes") {
      seen.Set(1);
      return ForEach(f, at, "an array of locators", [&](od::value& item, size_t i) {
        view->nodes.emplace_back();
        return ParseLocator(item, at + "[" + std::to_string(i) + "]", &view->nodes.back());
      });
    }
    return true;
  });
  if (!ok) return false;
  if (!seen.Has(0)) return Missing(offset, where, "is_anomaly");
  if (!seen.Has(1)) return Missing(offset, where, "nodes");
  return true;
}

bool Reader::ParseStep(od::value& v, const std::string& where, StepTruth* s) {
  const size_t offset = OffsetOf(v);
  Seen seen;
  const bool ok = ForFields(v, where, [&](std::string_view key, od::value& f) {
    const std::string at = where + "." + std::string(key);
    if (key == "seq") return seen.Set(0) && GetUint(f, at, &s->seq);
    if (key == "kind") return GetString(f, at, &s->kind, true);
    if (key == "start_ns") return GetIntAs(f, at, &s->start_ns);
    if (key == "end_ns") return GetIntAs(f, at, &s->end_ns);
    if (key == "requests") return seen.Set(1) && GetStrings(f, at, &s->requests);
    if (key == "fault") return seen.Set(2) && GetIntAs(f, at, &s->fault);
    if (key == "affected_requests") return seen.Set(3) && GetStrings(f, at, &s->affected_requests);
    if (key == "vertical") return seen.Set(4) && ParseView(f, at, &s->vertical);
    if (key == "horizontal") return seen.Set(5) && ParseView(f, at, &s->horizontal);
    if (key == "explanation") return GetString(f, at, &s->explanation, true);
    return true;
  });
  if (!ok) return false;
  static constexpr const char* kRequired[] = {"seq",      "requests",  "fault", "affected_requests",
                                              "vertical", "horizontal"};
  for (int i = 0; i < 6; ++i) {
    if (!seen.Has(i)) return Missing(offset, where, kRequired[i]);
  }
  return true;
}

Result<GroundTruth> Reader::Run() {
  if (json_.size() == 0)
    return Status::Error(path_ + ": empty file, expected a ground-truth JSON object");
  od::parser parser;
  od::document doc;
  if (const error_code e = parser.iterate(json_).get(doc); e != simdjson::SUCCESS) {
    FailJson(e, "", "a JSON object");
    return Status::Error(error_);
  }
  doc_ = &doc;
  GroundTruth t;
  Seen seen;
  std::string format;
  uint64_t version = 0;
  size_t format_offset = 0, version_offset = 0;
  od::value root;
  if (const error_code e = doc.get_value().get(root); e != simdjson::SUCCESS) {
    FailJson(e, "", "a JSON object");
    return Status::Error(error_);
  }
  const bool ok = ForFields(root, "", [&](std::string_view key, od::value& f) {
    const std::string at(key);
    if (key == "format") {
      seen.Set(0);
      format_offset = OffsetOf(f);
      return GetString(f, at, &format);
    }
    if (key == "version") {
      seen.Set(1);
      version_offset = OffsetOf(f);
      return GetUint(f, at, &version);
    }
    if (key == "setting") return GetString(f, at, &t.setting, true);
    if (key == "profile") return GetString(f, at, &t.profile, true);
    if (key == "seed") return GetUint(f, at, &t.seed);
    if (key == "topology") return ParseTopology(f, &t);
    if (key == "processes") {
      return ForEach(f, at, "an array of processes", [&](od::value& item, size_t i) {
        t.processes.emplace_back();
        return ParseProcess(item, at + "[" + std::to_string(i) + "]", &t.processes.back());
      });
    }
    if (key == "faults") {
      return ForEach(f, at, "an array of faults", [&](od::value& item, size_t i) {
        t.faults.emplace_back();
        return ParseFault(item, at + "[" + std::to_string(i) + "]", &t.faults.back());
      });
    }
    if (key == "requests") {
      seen.Set(2);
      return ForEach(f, at, "an array of requests", [&](od::value& item, size_t i) {
        t.requests.emplace_back();
        return ParseRequest(item, at + "[" + std::to_string(i) + "]", &t.requests.back());
      });
    }
    if (key == "confounders") {
      return ForEach(f, at, "an array of confounders", [&](od::value& item, size_t i) {
        t.confounders.emplace_back();
        return ParseConfounder(item, at + "[" + std::to_string(i) + "]", &t.confounders.back());
      });
    }
    if (key == "steps") {
      seen.Set(3);
      return ForEach(f, at, "an array of steps", [&](od::value& item, size_t i) {
        t.steps.emplace_back();
        return ParseStep(item, at + "[" + std::to_string(i) + "]", &t.steps.back());
      });
    }
    return true;
  });
  if (!ok) return Status::Error(error_);
  if (!seen.Has(0))
    return Status::Error(path_ + ": missing field \"format\" (expected \"teller-ground-truth\")");
  if (format != "teller-ground-truth") {
    Fail(format_offset, "format", "expected \"teller-ground-truth\", found \"" + format + "\"");
    return Status::Error(error_);
  }
  if (!seen.Has(1)) return Status::Error(path_ + ": missing field \"version\"");
  if (version < kOldestVersion || version > kVersion) {
    Fail(version_offset, "version",
         "unsupported version " + std::to_string(version) + " (this Teller reads versions " +
             std::to_string(kOldestVersion) + " to " + std::to_string(kVersion) + ")");
    return Status::Error(error_);
  }
  if (!seen.Has(2)) return Status::Error(path_ + ": missing field \"requests\"");
  if (!seen.Has(3)) return Status::Error(path_ + ": missing field \"steps\"");
  // After the root object the iterator is out of bounds unless something follows it.
  if (const char* p = nullptr; doc.current_location().get(p) == simdjson::SUCCESS) {
    Fail(OffsetOf(p), "", "unexpected content after the top-level object");
    return Status::Error(error_);
  }
  // Cross-references the dataset relies on: a fault id named by a step or request must
  // exist (the labels' fault_type comes from it).
  auto known_fault = [&](int f) {
    if (f == -1) return true;
    for (const auto& fr : t.faults) {
      if (fr.id == f) return true;
    }
    return false;
  };
  for (size_t i = 0; i < t.steps.size(); ++i) {
    if (!known_fault(t.steps[i].fault)) {
      return Status::Error(path_ + ": steps[" + std::to_string(i) + "].fault: fault " +
                           std::to_string(t.steps[i].fault) + " is not in \"faults\"");
    }
  }
  for (size_t i = 0; i < t.requests.size(); ++i) {
    if (!known_fault(t.requests[i].fault)) {
      return Status::Error(path_ + ": requests[" + std::to_string(i) + "].fault: fault " +
                           std::to_string(t.requests[i].fault) + " is not in \"faults\"");
    }
  }
  return t;
}

}  // namespace

Result<GroundTruth> ReadGroundTruth(const std::string& path) {
  Result<simdjson::padded_string> json = LoadJsonFile(path);
  if (!json.ok()) return json.status();
  return Reader(path, json.value()).Run();
}

}  // namespace teller::format
