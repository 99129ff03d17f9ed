// log.txt lines (include/teller/dataset/log_text.h).
#include "teller/dataset/log_text.h"

#include <charconv>

namespace teller::dataset {
namespace {

// The next blank-separated token of `rest`, which loses it and the blank after it.
std::string_view Token(std::string_view* rest) {
  const size_t end = rest->find(' ');
  const std::string_view token = rest->substr(0, end);
  rest->remove_prefix(end == std::string_view::npos ? rest->size() : end + 1);
  return token;
}

template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty()) return false;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

bool StartsWith(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

bool LevelOf(std::string_view word, LogLevel* out) {
  for (LogLevel l : {LogLevel::kUnknown, LogLevel::kDebug, LogLevel::kInfo, LogLevel::kWarning,
                     LogLevel::kError, LogLevel::kCritical}) {
    const std::string_view name = LogLevelName(l);
    if (word == (name.empty() ? std::string_view("-") : name)) {
      *out = l;
      return true;
    }
  }
  return false;
}

}  // namespace

std::string ModelLogLine(LogLevel level, std::string_view template_text) {
  const std::string_view name =
      level == LogLevel::kUnknown ? std::string_view("-") : LogLevelName(level);
  std::string out;
  out.reserve(name.size() + 1 + template_text.size());
  out.append(name).append(1, ' ').append(template_text);
  return out;
}

void AppendDatasetLogLine(std::string& out, const DatasetLogLine& line) {
  char buf[24];
  if (line.ts_ns == LogTable::kNoTime) {
    out += '-';
  } else {
    const auto r = std::to_chars(buf, buf + sizeof buf, line.ts_ns);
    out.append(buf, r.ptr);
  }
  out += " step=";
  out.append(buf, std::to_chars(buf, buf + sizeof buf, line.step).ptr);
  out += " template=";
  out.append(buf, std::to_chars(buf, buf + sizeof buf, line.template_id).ptr);
  out += line.names_request ? " scope=request " : " scope=batch ";
  const std::string_view level = LogLevelName(line.level);
  out += level.empty() ? std::string_view("-") : level;
  out += ' ';
  out += line.message;
  out += '\n';
}

Status ParseDatasetLogLine(std::string_view text, DatasetLogLine* out) {
  *out = DatasetLogLine();
  std::string_view rest = text;
  const std::string_view ts = Token(&rest);
  if (ts != "-" && !ParseNumber(ts, &out->ts_ns))
    return Status::Error("expected a time in ns or '-' first, found '" + std::string(ts) + "'");
  const std::string_view step = Token(&rest);
  if (!StartsWith(step, "step=") || !ParseNumber(step.substr(5), &out->step))
    return Status::Error("expected 'step=<k>' second, found '" + std::string(step) + "'");
  std::string_view word = Token(&rest);
  if (StartsWith(word, "template=")) {
    if (!ParseNumber(word.substr(9), &out->template_id) ||
        out->template_id == DatasetLogLine::kNoTemplate)
      return Status::Error("bad template id '" + std::string(word) + "'");
    word = Token(&rest);
    if (word != "scope=request" && word != "scope=batch")
      return Status::Error("expected 'scope=request' or 'scope=batch' after the template, found '" +
                           std::string(word) + "'");
    out->has_scope = true;
    out->names_request = word == "scope=request";
    word = Token(&rest);
  }
  if (!LevelOf(word, &out->level))
    return Status::Error(
        "expected a level (DEBUG, INFO, WARNING, ERROR, CRITICAL or '-'), found '" +
        std::string(word) + "'");
  out->message = rest;
  return Status::Ok();
}

}  // namespace teller::dataset
