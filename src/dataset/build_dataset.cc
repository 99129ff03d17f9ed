// The driver of `teller dataset build`: which directories are settings, their ground
// truth read up front (so that a malformed file or a name clash fails before minutes of
// work), settings built in parallel (each owns its Trace; nothing is shared but the
// progress callback), and index.json.
#include <dirent.h>
#include <limits.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "src/dataset/index_file.h"
#include "src/dataset/input_check.h"
#include "src/dataset/json_out.h"
#include "teller/core/file_util.h"
#include "teller/dataset/build.h"
#include "teller/dataset/dataset_export.h"
#include "teller/ingest/ingest.h"

namespace teller::dataset {
namespace {

std::string Join(const std::string& dir, const std::string& name) {
  return !dir.empty() && dir.back() == '/' ? dir + name : dir + "/" + name;
}

std::string BaseName(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::vector<std::string> SubDirectories(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      if (IsDirectory(Join(dir, e->d_name))) names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool HasTruth(const std::string& dir) { return IsRegularFile(Join(dir, format::kGroundTruthFile)); }

bool LooksLikeRawTrace(const std::string& dir) {
  return ingest::DetectFormat(dir) == ingest::InputFormat::kTellerRaw;
}

// index.json records where each setting came from so that `teller eval` can re-import
// it (to score `teller diagnose` against the labels); an absolute path keeps working
// from any working directory.
std::string AbsolutePath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) != nullptr) return buf;
  return path;
}

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Result<std::vector<std::string>> FindSettingDirs(const std::vector<std::string>& raw) {
  std::vector<std::string> dirs;
  for (const std::string& path : raw) {
    if (!IsDirectory(path)) {
      return Status::Error(path + ": not a directory (expected a `teller simulate` output with " +
                           format::kGroundTruthFile + ", or a directory of them)");
    }
    if (HasTruth(path)) {
      dirs.push_back(path);
      continue;
    }
    // A preset directory: its sub-directories with ground truth are the settings. A
    // sub-directory holding a raw trace without ground truth is an error, not skipped:
    // a setting would silently go missing from the dataset.
    size_t found = 0;
    std::string unlabelled;
    for (const std::string& sub : SubDirectories(path)) {
      const std::string dir = Join(path, sub);
      if (HasTruth(dir)) {
        dirs.push_back(dir);
        ++found;
      } else if (unlabelled.empty() && LooksLikeRawTrace(dir)) {
        unlabelled = dir;
      }
    }
    if (found == 0 && ingest::DetectFormat(path) != ingest::InputFormat::kUnknown)
      unlabelled = path;
    if (!unlabelled.empty()) {
      return Status::Error(unlabelled + ": a trace without " + format::kGroundTruthFile +
                           "; unlabelled traces go through `teller dataset export`");
    }
    if (found == 0) {
      return Status::Error(path + ": neither a simulation output (no " + format::kGroundTruthFile +
                           ") nor a directory of simulation outputs");
    }
  }
  return dirs;
}

Result<BuildSummary> BuildDataset(const std::vector<std::string>& raw, const std::string& out_dir,
                                  const BuildOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  // A build adds to a dataset of its own format only: one of format 1 (plain trace.json
  // files) is refused before any work, rather than left half in each format.
  const std::string index_path = Join(out_dir, internal::kIndexFile);
  if (IsRegularFile(index_path)) {
    int version = 0;
    auto old = internal::ReadIndexFile(index_path, &version);
    if (!old.ok())
      return Status::Error(old.status().message() + " (the existing index; remove it to rebuild)");
    if (version < kDatasetFormatVersion) {
      return Status::Error(index_path + ": dataset format version " + std::to_string(version) +
                           " (plain trace.json files); this teller builds version " +
                           std::to_string(kDatasetFormatVersion) +
                           " (trace.json.gz): rebuild the whole dataset into a new --out "
                           "directory (or remove " +
                           out_dir + " first)");
    }
  }
  auto dirs = FindSettingDirs(raw);
  if (!dirs.ok()) return dirs.status();

  // Ground truth first: small files, and the setting names come from them.
  struct Job {
    std::string dir, name;
    format::GroundTruth truth;
    std::optional<Result<SettingSummary>> result;
  };
  std::vector<Job> jobs(dirs->size());
  std::map<std::string, std::vector<size_t>> by_name;
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].dir = dirs.value()[i];
    auto truth = format::ReadGroundTruth(Join(jobs[i].dir, format::kGroundTruthFile));
    if (!truth.ok()) return truth.status();
    jobs[i].truth = std::move(truth).value();
    jobs[i].name = !jobs[i].truth.setting.empty() ? jobs[i].truth.setting : BaseName(jobs[i].dir);
    by_name[dataset::RequestDirName(jobs[i].name)].push_back(i);
  }
  // Runs of one setting with different seeds (several seeds of a preset, so that the test
  // parts grow) are kept apart as NAME.seedN, every one of them: which input came first
  // does not matter. The same seed twice is the same run given twice.
  for (const auto& [dir_name, members] : by_name) {
    if (members.size() == 1) continue;
    std::set<uint64_t> seeds;
    for (size_t i : members) {
      if (!seeds.insert(jobs[i].truth.seed).second) {
        return Status::Error("two inputs are setting \"" + jobs[i].name + "\" with seed " +
                             std::to_string(jobs[i].truth.seed) + " (the second is " + jobs[i].dir +
                             "); build them into different --out directories");
      }
    }
    for (size_t i : members) jobs[i].name += ".seed" + std::to_string(jobs[i].truth.seed);
  }
  std::set<std::string> names;
  for (const Job& job : jobs) {
    if (!names.insert(dataset::RequestDirName(job.name)).second) {
      return Status::Error("two inputs are setting \"" + job.name + "\" (the second is " + job.dir +
                           "); build them into different --out directories");
    }
  }
  // Refused before any work (BuildSetting checks again for library callers).
  for (const Job& job : jobs) {
    const std::string dir = Join(out_dir, dataset::RequestDirName(job.name));
    if (IsDirectory(dir) && DirectoryHasEntries(dir)) {
      return Status::Error(
          dir + " already exists and is not empty; remove it or build into another --out");
    }
  }
  TELLER_RETURN_IF_ERROR(MakeDirs(out_dir));

  std::mutex progress_mu;
  BuildOptions worker_options = options;
  worker_options.progress = [&](std::string_view line) {
    if (!options.progress) return;
    std::lock_guard<std::mutex> lock(progress_mu);
    options.progress(line);
  };
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < jobs.size(); i = next++) {
      Job& job = jobs[i];
      const auto start = std::chrono::steady_clock::now();
      // A missing or damaged input fails the setting: labels of a partial trace are wrong.
      if (Status s = internal::CheckManifestFiles(job.dir); !s.ok()) {
        job.result = Status::Error(job.name + ": " + s.message());
        continue;
      }
      Trace trace;
      if (Status s = ingest::ImportPath(job.dir, trace); !s.ok()) {
        job.result = Status::Error(job.name + ": " + s.message());
        continue;
      }
      if (Status s = internal::CheckImported(job.dir, job.truth, trace); !s.ok()) {
        job.result = Status::Error(job.name + ": " + s.message());
        continue;
      }
      const double import_seconds = Since(start);
      worker_options.progress(job.name + ": imported " + std::to_string(trace.events.size()) +
                              " events, " + std::to_string(trace.logs.size()) + " log lines from " +
                              job.dir);
      auto result = BuildSetting(trace, job.truth, job.name, out_dir, worker_options);
      if (result.ok()) {
        result->source = AbsolutePath(job.dir);
        result->import_seconds = import_seconds;
      }
      job.result = std::move(result);
    }
  };
  unsigned threads =
      options.jobs > 0 ? static_cast<unsigned>(options.jobs) : std::thread::hardware_concurrency();
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(jobs.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();

  BuildSummary summary;
  std::string errors;
  std::vector<internal::IndexEntry> entries;
  std::set<std::string> built;
  for (Job& job : jobs) {
    if (!job.result->ok()) {
      errors += (errors.empty() ? "" : "\n") + job.result->status().message();
      continue;
    }
    built.insert(job.result->value().name);
    entries.push_back(internal::EntryFor(job.result->value()));
    summary.settings.push_back(std::move(*job.result).value());
  }
  // Entries of settings built earlier into this directory stay, while their data does.
  if (IsRegularFile(index_path)) {
    auto old = internal::ReadIndexFile(index_path);
    if (!old.ok())
      return Status::Error(old.status().message() + " (the existing index; remove it to rebuild)");
    for (internal::IndexEntry& e : old.value()) {
      if (built.count(e.name) == 0 && IsDirectory(Join(out_dir, dataset::RequestDirName(e.name)))) {
        entries.push_back(std::move(e));
      }
    }
  }
  std::sort(
      entries.begin(), entries.end(),
      [](const internal::IndexEntry& a, const internal::IndexEntry& b) { return a.name < b.name; });
  if (!entries.empty())
    TELLER_RETURN_IF_ERROR(WriteFileAtomic(index_path, internal::IndexJson(entries)));
  if (!errors.empty()) return Status::Error(errors);
  summary.seconds = Since(t0);
  return summary;
}

}  // namespace teller::dataset
