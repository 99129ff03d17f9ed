#include "teller/core/trace.h"

namespace teller {

std::string_view EventTypeName(EventType type) {
  switch (type) {
    case EventType::kPush:
      return "push";
    case EventType::kPop:
      return "pop";
    case EventType::kRange:
      return "range";
    case EventType::kMark:
      return "mark";
    case EventType::kRuntime:
      return "runtime";
    case EventType::kDriver:
      return "driver";
    case EventType::kKernel:
      return "kernel";
    case EventType::kMemcpy:
      return "memcpy";
    case EventType::kMemset:
      return "memset";
    case EventType::kSync:
      return "sync";
    case EventType::kGpuAnnotation:
      return "gpu_annotation";
  }
  return "unknown";
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarning:
      return "WARNING";
    case LogLevel::kError:
      return "ERROR";
    case LogLevel::kCritical:
      return "CRITICAL";
    case LogLevel::kUnknown:
      break;
  }
  return "";
}

void EventTable::Reserve(size_t n) {
  type.reserve(n);
  name.reserve(n);
  category.reserve(n);
  domain.reserve(n);
  process.reserve(n);
  thread.reserve(n);
  start_ns.reserve(n);
  end_ns.reserve(n);
  correlation.reserve(n);
  external_id.reserve(n);
  device.reserve(n);
  stream.reserve(n);
  bytes.reserve(n);
  flags.reserve(n);
  signature.reserve(n);
}

size_t EventTable::Append(const EventRow& r) {
  type.push_back(r.type);
  name.push_back(r.name);
  category.push_back(r.category);
  domain.push_back(r.domain);
  process.push_back(r.process);
  thread.push_back(r.thread);
  start_ns.push_back(r.start_ns);
  end_ns.push_back(r.end_ns);
  correlation.push_back(r.correlation);
  external_id.push_back(r.external_id);
  device.push_back(r.device);
  stream.push_back(r.stream);
  bytes.push_back(r.bytes);
  flags.push_back(r.flags);
  signature.push_back(r.signature);
  return type.size() - 1;
}

EventRow EventTable::Row(size_t i) const {
  EventRow r;
  r.type = type[i];
  r.name = name[i];
  r.category = category[i];
  r.domain = domain[i];
  r.process = process[i];
  r.thread = thread[i];
  r.start_ns = start_ns[i];
  r.end_ns = end_ns[i];
  r.correlation = correlation[i];
  r.external_id = external_id[i];
  r.device = device[i];
  r.stream = stream[i];
  r.bytes = bytes[i];
  r.flags = flags[i];
  r.signature = signature[i];
  return r;
}

size_t EventTable::MemoryBytes() const {
  return type.capacity() * sizeof(EventType) + name.capacity() * sizeof(StringId) +
         category.capacity() * sizeof(StringId) + domain.capacity() * sizeof(StringId) +
         process.capacity() * 4 + thread.capacity() * 4 + start_ns.capacity() * 8 +
         end_ns.capacity() * 8 + correlation.capacity() * 8 + external_id.capacity() * 8 +
         device.capacity() * 4 + stream.capacity() * 4 + bytes.capacity() * 8 +
         flags.capacity() * 4 + signature.capacity() * sizeof(StringId);
}

uint32_t Trace::ProcessIndex(std::string_view host, int64_t pid) {
  const StringId host_id = strings.Intern(host);
  for (uint32_t i = 0; i < processes.size(); ++i) {
    if (processes[i].pid == pid && processes[i].host == host_id) return i;
  }
  ProcessInfo p;
  p.pid = pid;
  p.host = host_id;
  processes.push_back(p);
  return static_cast<uint32_t>(processes.size() - 1);
}

}  // namespace teller
