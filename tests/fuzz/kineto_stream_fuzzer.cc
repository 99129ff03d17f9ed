// libFuzzer target for the streaming Kineto import, differential: the same bytes read in
// pieces (ImportKinetoStream, through GunzipStream when they are gzip) and whole
// (MaybeGunzip + ImportKinetoJson) must both fail or both succeed with the same rows and
// counters. The first two bytes choose the window size (256 B and up) and the read size
// (1 B and up), so that window cuts and read boundaries fall everywhere. Seeds: any
// *.json / *.json.gz Chrome trace (the first two bytes are then taken as sizes).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "src/ingest/kineto_importer.h"
#include "teller/core/gunzip_stream.h"
#include "teller/core/gzip.h"

namespace {

class TrickleSource : public teller::ByteSource {
 public:
  TrickleSource(std::string_view bytes, size_t piece) : bytes_(bytes), piece_(piece) {}
  teller::Status Read(char* dst, size_t capacity, size_t* got) override {
    *got = std::min({capacity, piece_, bytes_.size() - pos_});
    std::memcpy(dst, bytes_.data() + pos_, *got);
    pos_ += *got;
    return teller::Status::Ok();
  }

 private:
  std::string_view bytes_;
  size_t piece_;
  size_t pos_ = 0;
};

bool SameRows(const teller::Trace& a, const teller::Trace& b) {
  const teller::EventTable& x = a.events;
  const teller::EventTable& y = b.events;
  if (x.size() != y.size() || x.type != y.type || x.start_ns != y.start_ns ||
      x.end_ns != y.end_ns || x.process != y.process || x.thread != y.thread ||
      x.correlation != y.correlation || x.bytes != y.bytes || x.device != y.device ||
      x.stream != y.stream) {
    return false;
  }
  for (size_t i = 0; i < x.size(); ++i) {
    if (a.strings.Get(x.name[i]) != b.strings.Get(y.name[i])) return false;
  }
  return a.counters.items() == b.counters.items();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  teller::ingest::SetKinetoWindowBytesForTesting(256 + size_t{data[0]} * 8);
  teller::ingest::SetKinetoReadBytesForTesting(1 + size_t{data[1]});
  teller::ingest::SetKinetoGunzipThreadForTesting(false);
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 2, size - 2);

  teller::Trace whole;
  teller::ingest::PaddedBuffer raw;
  if (!raw.Reserve(bytes.size())) return 0;
  std::memcpy(raw.data(), bytes.data(), bytes.size());
  raw.Resize(bytes.size());
  teller::ingest::PaddedBuffer json;
  teller::Status whole_status =
      teller::ingest::MaybeGunzip(std::move(raw), "fuzz.json", json, nullptr);
  if (whole_status.ok()) whole_status = teller::ingest::ImportKinetoJson(json, "fuzz.json", whole);

  teller::Trace streamed;
  TrickleSource source(bytes, 1 + size_t{data[1]} * 3);
  teller::Status stream_status;
  if (teller::IsGzip(bytes)) {
    teller::GunzipOptions options;
    if (!teller::GuardedGunzipOptions(bytes.size(), &options).ok()) return 0;
    teller::GunzipStream gunzip(source, "fuzz.json", options);
    stream_status = teller::ingest::ImportKinetoStream(gunzip, "fuzz.json", streamed, 0);
  } else {
    stream_status = teller::ingest::ImportKinetoStream(source, "fuzz.json", streamed, 0);
  }
  if (stream_status.ok() != whole_status.ok()) __builtin_trap();
  if (whole_status.ok() && !SameRows(streamed, whole)) __builtin_trap();
  if (!stream_status.ok() && streamed.events.size() != 0) __builtin_trap();
  return 0;
}
