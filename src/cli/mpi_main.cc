// teller-mpi: `teller diagnose` of a job's files shared among the processes of an MPI job
// (docs/diagnose.md, "Many machines"). Started by mpirun, every process runs this; process
// 0 runs `teller diagnose` with the arguments given and writes the report, and the import
// of every TRACE and baseline is shared: before each, process 0 sends all processes the
// list of its files (ingest::PartFiles), process k imports files k, k + N, k + 2N, ...
// alone and sends each to process 0 as a part, and process 0 appends them in the list's
// order, importing its own share itself. The trace, and so the report, is the one
// `teller diagnose` gives in one process (ingest/parts.h).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "src/cli/commands.h"
#include "teller/core/progress.h"
#include "teller/ingest/parts.h"

namespace teller::cli {
namespace {

constexpr int kRoot = 0;
constexpr int kPartTag = 17;
// MPI counts are ints: a part travels as its length and then slices of at most this.
constexpr uint64_t kSliceBytes = 1ull << 30;
// The length of a file list that means "no more imports: exit".
constexpr uint64_t kStop = UINT64_MAX;

constexpr const char* kHelp =
    "usage: mpirun -np N teller-mpi diagnose TRACE... [teller diagnose options]\n"
    "\n"
    "`teller diagnose` with the import of its files shared among the N processes of an\n"
    "MPI job: the rank files of a folder, the .tlr files of a `teller run` or `teller\n"
    "simulate` directory, and single trace files (logs are read by process 0). Process k\n"
    "imports files k, k+N, k+2N, ... and sends them to process 0, which writes the\n"
    "report: the same report, byte for byte, as `teller diagnose` with the same\n"
    "arguments. Every process must see the files under the same paths (a shared file\n"
    "system on a cluster). Options: as `teller diagnose --help`.\n";

// Waits for `request` without spinning: MPI's blocking calls poll at full speed, and a
// process waiting for a part (or for the next list) would take a core from the processes
// importing and diagnosing, where there are fewer cores than processes. A millisecond's
// delay per message is nothing next to a file's import.
void Wait(MPI_Request& request) {
  int done = 0;
  for (useconds_t pause = 50;; pause = std::min<useconds_t>(pause * 2, 1000)) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done) return;
    usleep(pause);
  }
}

void SendBytes(const std::string& bytes, int to) {
  uint64_t n = bytes.size();
  MPI_Request request;
  MPI_Isend(&n, 1, MPI_UINT64_T, to, kPartTag, MPI_COMM_WORLD, &request);
  Wait(request);
  for (uint64_t at = 0; at < n; at += kSliceBytes) {
    const int slice = static_cast<int>(std::min(kSliceBytes, n - at));
    MPI_Isend(bytes.data() + at, slice, MPI_BYTE, to, kPartTag, MPI_COMM_WORLD, &request);
    Wait(request);
  }
}

std::string ReceiveBytes(int from) {
  uint64_t n = 0;
  MPI_Request request;
  MPI_Irecv(&n, 1, MPI_UINT64_T, from, kPartTag, MPI_COMM_WORLD, &request);
  Wait(request);
  std::string bytes(n, '\0');
  for (uint64_t at = 0; at < n; at += kSliceBytes) {
    const int slice = static_cast<int>(std::min(kSliceBytes, n - at));
    MPI_Irecv(bytes.data() + at, slice, MPI_BYTE, from, kPartTag, MPI_COMM_WORLD, &request);
    Wait(request);
  }
  return bytes;
}

// MPI_Bcast, waited for as Wait does.
void Broadcast(void* data, uint64_t count, MPI_Datatype type) {
  MPI_Request request;
  MPI_Ibcast(data, static_cast<int>(count), type, kRoot, MPI_COMM_WORLD, &request);
  Wait(request);
}

// A file list from process 0 to all: its length in files, then the names joined by '\0'.
void BroadcastFiles(const std::vector<std::string>& files) {
  uint64_t count = files.size();
  Broadcast(&count, 1, MPI_UINT64_T);
  std::string joined;
  for (const std::string& f : files) joined.append(f).push_back('\0');
  uint64_t bytes = joined.size();
  Broadcast(&bytes, 1, MPI_UINT64_T);
  for (uint64_t at = 0; at < bytes; at += kSliceBytes) {
    Broadcast(joined.data() + at, std::min(kSliceBytes, bytes - at), MPI_BYTE);
  }
}

// The other side of BroadcastFiles; false for kStop.
bool ReceiveFiles(std::vector<std::string>& files) {
  uint64_t count = 0;
  Broadcast(&count, 1, MPI_UINT64_T);
  if (count == kStop) return false;
  uint64_t bytes = 0;
  Broadcast(&bytes, 1, MPI_UINT64_T);
  std::string joined(bytes, '\0');
  for (uint64_t at = 0; at < bytes; at += kSliceBytes) {
    Broadcast(joined.data() + at, std::min(kSliceBytes, bytes - at), MPI_BYTE);
  }
  files.clear();
  for (size_t at = 0; files.size() < count && at < joined.size();) {
    const size_t end = joined.find('\0', at);
    files.push_back(joined.substr(at, end - at));
    at = end + 1;
  }
  return true;
}

void BroadcastStop() {
  uint64_t stop = kStop;
  Broadcast(&stop, 1, MPI_UINT64_T);
}

// A worker's message for one file: 'P' and the part's bytes, or 'E' and the error.
std::string PartMessage(const std::string& file) {
  std::string message;
  {
    ingest::ImportedPart part;
    const Status s = ingest::ImportPart(file, part);
    if (!s.ok()) return "E" + s.message();
    message = "P" + ingest::EncodePart(part);
  }  // the part's tables are freed before the send waits for process 0
  return message;
}

// Process 0's side: the parts of the files on the list, in order.
class MpiParts : public ingest::PartSource {
 public:
  explicit MpiParts(int processes) : processes_(processes) {}

  void Begin(const std::vector<std::string>& paths) override {
    files_ = ingest::PartFiles(paths);
    next_ = 0;
    BroadcastFiles(files_);
  }

  bool Take(const std::string& file, ingest::ImportedPart& part, Status& status) override {
    // The import asks for the files in the list's order; anything else is read here.
    if (next_ >= files_.size() || files_[next_] != file) {
      ++unplanned_;
      return false;
    }
    const int owner = static_cast<int>(next_ % static_cast<size_t>(processes_));
    ++next_;
    if (owner == kRoot) return false;
    const std::string message = ReceiveBytes(owner);
    if (message.empty() || message[0] != 'P') {
      status =
          Status::Error(message.empty() ? file + ": no part from process " + std::to_string(owner)
                                        : message.substr(1));
      return true;
    }
    status = ingest::DecodePart(std::string_view(message).substr(1),
                                file + " (from process " + std::to_string(owner) + ")", part);
    return true;
  }

  // The parts not taken (the import stopped at an error) are received and dropped, so
  // that no process waits on a send.
  void End() override {
    for (; next_ < files_.size(); ++next_) {
      const int owner = static_cast<int>(next_ % static_cast<size_t>(processes_));
      if (owner != kRoot) ReceiveBytes(owner);
    }
    if (unplanned_ > 0) {
      std::fprintf(stderr,
                   "teller-mpi: %zu file(s) were imported by process 0 out of the shared "
                   "order (the report is unaffected)\n",
                   unplanned_);
      unplanned_ = 0;
    }
  }

 private:
  int processes_;
  std::vector<std::string> files_;
  size_t next_ = 0;
  size_t unplanned_ = 0;
};

// Every process but 0: import the share of each list until told to stop.
void Work(int rank, int processes) {
  std::vector<std::string> files;
  while (ReceiveFiles(files)) {
    for (size_t i = static_cast<size_t>(rank); i < files.size();
         i += static_cast<size_t>(processes)) {
      SendBytes(PartMessage(files[i]), kRoot);
    }
  }
}

}  // namespace
}  // namespace teller::cli

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, processes = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  const std::vector<std::string> args(argv + std::min(argc, 2), argv + argc);
  const bool help =
      argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0;
  int code = 0;
  if (help || std::strcmp(argv[1], "diagnose") != 0) {
    // Every process sees the same arguments: all stop here, process 0 says why.
    if (rank == teller::cli::kRoot) {
      if (!help) std::fprintf(stderr, "teller-mpi: unknown command '%s'\n\n", argv[1]);
      std::fputs(teller::cli::kHelp, help ? stdout : stderr);
    }
    code = help ? 0 : 2;
  } else if (rank == teller::cli::kRoot) {
    const teller::ScopedTerminalProgress progress;  // shown when stderr is a terminal
    teller::cli::KeepFreedMemory();
    teller::cli::MpiParts parts(processes);
    code = teller::cli::DiagnoseCommand(args, &parts);
    teller::cli::BroadcastStop();
  } else {
    teller::cli::Work(rank, processes);
  }
  MPI_Finalize();
  return code;
}
