// TPE training speed against sentencepiece's BPE trainer on the same symbols, in one run
// (bench/README.md, "TPE training"). Target (the TPE issue): vocabulary 1,024 on 5.6 M
// symbols in under 3 s, at least 4x faster than spm_train.
//
// The corpus: the steps of a dataset (--data DIR, from `teller dataset build`; steps in
// order until --symbols are reached) or, by default, synthetic serving-shaped steps: lines
// of 2,242 symbols drawn from a few hundred symbol types with the per-layer structure of
// real steps (STEP > model > layers > ops > launch > kernel, collectives, copies), kernel
// variants chosen by a per-step batch bucket, and a little per-kernel noise so that lines
// are not copies of each other.
//
// sentencepiece sees the same corpus written one character per symbol (symbol id s ->
// code point U+4E00 + s, CJK ideographs: one Unicode script, untouched by normalization),
// one line per step, and is run as
//   spm_train --model_type=bpe --vocab_size=V --split_by_whitespace=false
//             --character_coverage=1.0 --max_sentence_length=<longest line in bytes>
// (the last flag because spm silently drops lines over 4,192 bytes, i.e. all of them).
// Times: ours is TrainMerges alone, in process, median of --runs; spm's is the wall time
// of the spm_train process (reading its input, training, writing its model), median of
// --spm-runs. Peak RSS: each side in a fresh process (ours: this program re-executed to
// load the corpus from a binary file and train once), from wait4() in a small launcher
// process (see Launcher).
//
// Usage: tpe_benchmark [--data DIR] [--symbols N] [--line L] [--vocab V] [--runs R]
//                      [--spm-runs R] [--spm PATH] [--no-spm] [--seed S] [--keep DIR]
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "teller/tpe/tpe.h"

namespace {

using teller::tpe::TokenId;

struct Corpus {
  std::vector<TokenId> symbols;
  std::vector<uint64_t> offsets{0};
  uint32_t base_size = 0;
  std::string description;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// ---- Synthetic serving-shaped corpus ------------------------------------------------------

// One engine's catalogue of symbol ids (a setting: its own model, kernels and APIs).
struct Engine {
  TokenId step[3];  // prefill, decode, mixed
  TokenId model, layer, sampler, launch, launch_ex, sync, memcpy, memcpy_api;
  std::vector<TokenId> op;                    // per-layer ops (frontend/backend ranges)
  std::vector<std::vector<TokenId>> kernel;   // per op: variants by batch bucket
  std::vector<bool> driver_launch;            // per op: launched through the driver API
  std::vector<TokenId> comm, comm_kernel;     // collectives (per layer) and their kernels
  std::vector<TokenId> tail_op, tail_kernel;  // sampler ops
  int layers = 32;
};

class SymbolCounter {
 public:
  TokenId Next() { return next_++; }
  TokenId size() const { return next_; }

 private:
  TokenId next_ = teller::tpe::kNumSpecialTokens;  // ids as the trainer's alphabet has them
};

Engine MakeEngine(SymbolCounter& ids, std::mt19937& rng, int layers, int ops) {
  Engine e;
  for (TokenId& s : e.step) s = ids.Next();
  e.model = ids.Next(), e.layer = ids.Next(), e.sampler = ids.Next();
  e.launch = ids.Next(), e.launch_ex = ids.Next(), e.sync = ids.Next();
  e.memcpy = ids.Next(), e.memcpy_api = ids.Next();
  e.layers = layers;
  for (int o = 0; o < ops; ++o) {
    e.op.push_back(ids.Next());
    std::vector<TokenId> variants;
    const int n = 1 + static_cast<int>(rng() % 4);  // GEMMs have several tile variants
    for (int v = 0; v < n; ++v) variants.push_back(ids.Next());
    e.kernel.push_back(variants);
    e.driver_launch.push_back(rng() % 4 == 0);
  }
  for (int c = 0; c < 2; ++c) e.comm.push_back(ids.Next()), e.comm_kernel.push_back(ids.Next());
  for (int t = 0; t < 6; ++t) e.tail_op.push_back(ids.Next()), e.tail_kernel.push_back(ids.Next());
  return e;
}

Corpus SyntheticCorpus(uint64_t total, uint64_t line, uint32_t seed) {
  std::mt19937 rng(seed);
  SymbolCounter ids;
  std::vector<Engine> engines;
  const int layers[] = {28, 32, 24, 36, 32};
  const int ops[] = {12, 14, 10, 16, 12};
  for (int k = 0; k < 5; ++k) engines.push_back(MakeEngine(ids, rng, layers[k], ops[k]));
  // A pool of rare symbols (unusual kernels, allocator calls) used by the noise.
  std::vector<TokenId> rare;
  for (int i = 0; i < 40; ++i) rare.push_back(ids.Next());

  Corpus c;
  c.base_size = ids.size();
  c.symbols.reserve(total);
  std::uniform_real_distribution<double> u(0, 1);
  while (c.symbols.size() < total) {
    const uint64_t end = std::min<uint64_t>(total, c.symbols.size() + line);
    const Engine& e = engines[rng() % engines.size()];
    const double kind_draw = u(rng);
    const int kind = kind_draw < 0.2 ? 0 : kind_draw < 0.9 ? 1 : 2;
    const int bucket = static_cast<int>(rng() % 4);  // batch-size bucket picks kernel variants
    auto emit = [&](TokenId s) {
      if (c.symbols.size() < end) c.symbols.push_back(s);
    };
    emit(e.step[kind]);
    emit(e.model);
    // Layers repeat until the line is full (a truncated last layer, like a cut record).
    for (int l = 0; c.symbols.size() < end; ++l) {
      if (l == e.layers) {  // the sampler, then the next micro-batch's layers
        emit(e.sampler);
        for (size_t t = 0; t < e.tail_op.size(); ++t) {
          emit(e.tail_op[t]), emit(e.launch), emit(e.tail_kernel[t]);
        }
        emit(e.memcpy_api), emit(e.memcpy), emit(e.sync);
        l = -1;
        continue;
      }
      emit(e.layer);
      for (size_t o = 0; o < e.op.size(); ++o) {
        emit(e.op[o]);
        emit(e.driver_launch[o] ? e.launch_ex : e.launch);
        const auto& v = e.kernel[o];
        TokenId k = v[static_cast<size_t>(bucket) % v.size()];
        if (u(rng) < 0.01) k = rare[rng() % rare.size()];  // an odd kernel now and then
        emit(k);
        if (o == e.op.size() / 2 || o + 1 == e.op.size()) {  // tensor-parallel collectives
          const size_t ci = o + 1 == e.op.size();
          emit(e.comm[ci]), emit(e.launch), emit(e.comm_kernel[ci]);
        }
      }
      if (u(rng) < 0.03) emit(e.memcpy_api), emit(e.memcpy), emit(e.sync);
    }
    c.offsets.push_back(c.symbols.size());
  }
  char buf[200];
  std::snprintf(buf, sizeof(buf),
                "synthetic: %llu lines of <= %llu symbols, %u symbol types, 5 engines (seed %u)",
                static_cast<unsigned long long>(c.offsets.size() - 1),
                static_cast<unsigned long long>(line), c.base_size - teller::tpe::kNumSpecialTokens,
                seed);
  c.description = buf;
  return c;
}

// ---- A dataset's steps ---------------------------------------------------------------------

bool DatasetCorpus(const std::string& data, uint64_t total, Corpus* out) {
  teller::Result<teller::tpe::Corpus> corpus = teller::tpe::LoadCorpus(data, {});
  if (!corpus.ok()) {
    std::fprintf(stderr, "tpe_benchmark: %s\n", corpus.status().message().c_str());
    return false;
  }
  const teller::tpe::Model alphabet(teller::tpe::Model::BaseAlphabet(corpus->symbol_text), {});
  const std::vector<TokenId> ids = teller::tpe::ModelIds(*corpus, alphabet);
  out->base_size = alphabet.base_size();
  size_t k = 0;
  for (; k < corpus->num_steps() && out->symbols.size() < total; ++k) {
    out->symbols.insert(out->symbols.end(), ids.begin() + corpus->offsets[k],
                        ids.begin() + corpus->offsets[k + 1]);
    out->offsets.push_back(out->symbols.size());
  }
  out->description =
      data + ": " + std::to_string(k) + " of " + std::to_string(corpus->num_steps()) + " steps, " +
      std::to_string(alphabet.base_size() - teller::tpe::kNumSpecialTokens) + " symbol types";
  return true;
}

// ---- Files ---------------------------------------------------------------------------------

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool WriteAll(const std::string& path, const void* data, size_t size) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) return false;
  const bool ok = std::fwrite(data, 1, size, f) == size;
  return std::fclose(f) == 0 && ok;
}

// The spm input: one line per sequence, one code point per symbol. Returns the longest
// line in bytes.
size_t WriteSpmInput(const Corpus& c, const std::string& path) {
  std::string text;
  size_t longest = 0;
  for (size_t k = 0; k + 1 < c.offsets.size(); ++k) {
    const size_t start = text.size();
    for (uint64_t i = c.offsets[k]; i < c.offsets[k + 1]; ++i)
      AppendUtf8(text, 0x4E00 + c.symbols[i]);
    longest = std::max(longest, text.size() - start);
    text += '\n';
  }
  if (!WriteAll(path, text.data(), text.size())) return 0;
  return longest;
}

// Binary corpus for the child process: base, lines, symbols, offsets, symbols[].
bool WriteBinary(const Corpus& c, const std::string& path) {
  std::string b;
  const uint64_t header[3] = {c.base_size, c.offsets.size(), c.symbols.size()};
  b.append(reinterpret_cast<const char*>(header), sizeof(header));
  b.append(reinterpret_cast<const char*>(c.offsets.data()), c.offsets.size() * sizeof(uint64_t));
  b.append(reinterpret_cast<const char*>(c.symbols.data()), c.symbols.size() * sizeof(TokenId));
  return WriteAll(path, b.data(), b.size());
}

bool ReadBinary(const std::string& path, Corpus* c) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  uint64_t header[3];
  bool ok = std::fread(header, sizeof(header), 1, f) == 1;
  if (ok) {
    c->base_size = static_cast<uint32_t>(header[0]);
    c->offsets.resize(header[1]);
    c->symbols.resize(header[2]);
    ok = std::fread(c->offsets.data(), sizeof(uint64_t), header[1], f) == header[1] &&
         std::fread(c->symbols.data(), sizeof(TokenId), header[2], f) == header[2];
  }
  std::fclose(f);
  return ok;
}

// ---- Processes -----------------------------------------------------------------------------
//
// Peak RSS comes from wait4(), and Linux folds the memory of the process that forked the
// child (the copied page tables before exec) into the child's maximum. So children are
// started by a launcher forked at the top of main(), while this process is still a few
// MB, and never by the process that holds the corpus.

struct ChildRun {
  int status = -1;
  double seconds = 0;  // wall time of the process
  long max_rss_kb = 0;
};

bool WriteFull(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadFull(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Runs argv with stdout to `out_path` and stderr to `err_path` (here, in the launcher).
ChildRun SpawnHere(const std::vector<std::string>& argv, const std::string& out_path,
                   const std::string& err_path) {
  ChildRun r;
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) dup2(out, 1);
    if (err >= 0) dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  if (pid < 0) return r;
  rusage usage{};
  int status = 0;
  wait4(pid, &status, 0, &usage);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.max_rss_kb = usage.ru_maxrss;
  return r;
}

class Launcher {
 public:
  // Forks the launcher; call first thing in main().
  void Start() {
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) return;
    const pid_t pid = fork();
    if (pid == 0) {
      close(to[1]);
      close(from[0]);
      Serve(to[0], from[1]);
      _exit(0);
    }
    close(to[0]);
    close(from[1]);
    if (pid > 0) {
      pid_ = pid;
      to_ = to[1];
      from_ = from[0];
    }
  }
  ChildRun Run(const std::vector<std::string>& argv, const std::string& out_path,
               const std::string& err_path) {
    if (pid_ <= 0) return SpawnHere(argv, out_path, err_path);
    std::vector<std::string> message{out_path, err_path};
    message.insert(message.end(), argv.begin(), argv.end());
    const uint32_t count = static_cast<uint32_t>(message.size());
    bool ok = WriteFull(to_, &count, sizeof(count));
    for (const std::string& m : message) {
      const uint32_t len = static_cast<uint32_t>(m.size());
      ok = ok && WriteFull(to_, &len, sizeof(len)) && WriteFull(to_, m.data(), len);
    }
    ChildRun r;
    if (!ok || !ReadFull(from_, &r, sizeof(r))) r.status = -1;
    return r;
  }
  ~Launcher() {
    if (pid_ > 0) {
      close(to_);
      close(from_);
      waitpid(pid_, nullptr, 0);
    }
  }

 private:
  static void Serve(int in, int out) {
    while (true) {
      uint32_t count = 0;
      if (!ReadFull(in, &count, sizeof(count))) return;
      std::vector<std::string> message(count);
      for (std::string& m : message) {
        uint32_t len = 0;
        if (!ReadFull(in, &len, sizeof(len))) return;
        m.resize(len);
        if (len > 0 && !ReadFull(in, m.data(), len)) return;
      }
      if (message.size() < 3) return;
      const ChildRun r = SpawnHere(std::vector<std::string>(message.begin() + 2, message.end()),
                                   message[0], message[1]);
      if (!WriteFull(out, &r, sizeof(r))) return;
    }
  }
  pid_t pid_ = -1;
  int to_ = -1, from_ = -1;
};

std::string SelfExe() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

// --child-train FILE VOCAB: load the binary corpus, train once, print seconds and tokens.
int ChildTrain(const std::string& path, uint32_t vocab) {
  Corpus c;
  if (!ReadBinary(path, &c)) return 3;
  teller::tpe::TrainOptions o;
  o.vocab_size = vocab;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = teller::tpe::TrainMerges({c.symbols, c.offsets}, c.base_size, o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!r.ok()) return 4;
  std::printf("%.6f %llu\n", s, static_cast<unsigned long long>(r->tokens_after.back()));
  return 0;
}

void Usage() {
  std::fputs(
      "usage: tpe_benchmark [--data DIR] [--symbols N] [--line L] [--vocab V] [--runs R]\n"
      "                     [--spm-runs R] [--spm PATH] [--no-spm] [--seed S] [--keep DIR]\n"
      "  --data DIR     steps of a dataset from `teller dataset build` (default: synthetic)\n"
      "  --symbols N    corpus size in symbols (default 5600000)\n"
      "  --line L       synthetic line length (default 2242, the paper's events per step)\n"
      "  --vocab V      vocabulary size for both trainers (default 1024)\n"
      "  --runs R       runs of our trainer (default 5); --spm-runs R: of spm_train (default 3)\n"
      "  --spm PATH     spm_train to run (default /usr/bin/spm_train); --no-spm: skip it\n"
      "  --keep DIR     write the corpora and spm's model there (default: a temp dir, removed)\n",
      stderr);
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // results interleave with progress on stderr
  Launcher launcher;
  if (!(argc > 1 && std::string(argv[1]) == "--child-train")) launcher.Start();
  std::string data, spm = "/usr/bin/spm_train", keep;
  uint64_t total = 5'600'000, line = 2242;
  uint32_t vocab = 1024, seed = 1;
  int runs = 5, spm_runs = 3;
  bool run_spm = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        Usage();
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--child-train") {
      const std::string path = value();
      return ChildTrain(path, static_cast<uint32_t>(std::stoul(value())));
    } else if (a == "--data") {
      data = value();
    } else if (a == "--symbols") {
      total = std::stoull(value());
    } else if (a == "--line") {
      line = std::max<uint64_t>(1, std::stoull(value()));
    } else if (a == "--vocab") {
      vocab = static_cast<uint32_t>(std::stoul(value()));
    } else if (a == "--runs") {
      runs = std::max(1, std::stoi(value()));
    } else if (a == "--spm-runs") {
      spm_runs = std::max(1, std::stoi(value()));
    } else if (a == "--spm") {
      spm = value();
    } else if (a == "--no-spm") {
      run_spm = false;
    } else if (a == "--seed") {
      seed = static_cast<uint32_t>(std::stoul(value()));
    } else if (a == "--keep") {
      keep = value();
    } else {
      Usage();
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }

  Corpus corpus;
  if (data.empty()) {
    corpus = SyntheticCorpus(total, line, seed);
  } else if (!DatasetCorpus(data, total, &corpus)) {
    return 1;
  }
  std::printf("corpus: %s; %zu symbols in %zu lines\n", corpus.description.c_str(),
              corpus.symbols.size(), corpus.offsets.size() - 1);
  if (vocab < corpus.base_size) {
    std::fprintf(stderr, "tpe_benchmark: --vocab %u is below the base alphabet (%u)\n", vocab,
                 corpus.base_size);
    return 1;
  }

  std::string dir = keep;
  if (dir.empty()) {
    char tmpl[] = "/tmp/tpe-benchmark-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return 1;
    dir = tmpl;
  } else {
    std::system(("mkdir -p '" + dir + "'").c_str());
  }

  // Ours, in process.
  std::vector<double> ours;
  uint64_t tokens = 0, merges = 0, distinct = 0;
  for (int r = 0; r < runs; ++r) {
    teller::tpe::TrainOptions o;
    o.vocab_size = vocab;
    const auto t0 = std::chrono::steady_clock::now();
    auto result = teller::tpe::TrainMerges({corpus.symbols, corpus.offsets}, corpus.base_size, o);
    ours.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (!result.ok()) {
      std::fprintf(stderr, "tpe_benchmark: %s\n", result.status().message().c_str());
      return 1;
    }
    tokens = result->tokens_after.back();
    merges = result->merges.size();
    distinct = result->distinct_sequences;
    std::fprintf(stderr, "teller run %d: %.3f s\n", r + 1, ours.back());
  }
  const double our_median = Median(ours);
  std::printf(
      "teller TPE: median %.3f s over %d runs (min %.3f, max %.3f); %llu merges, "
      "%zu -> %llu tokens (%.2fx); %llu distinct lines\n",
      our_median, runs, *std::min_element(ours.begin(), ours.end()),
      *std::max_element(ours.begin(), ours.end()), static_cast<unsigned long long>(merges),
      corpus.symbols.size(), static_cast<unsigned long long>(tokens),
      static_cast<double>(corpus.symbols.size()) / static_cast<double>(tokens),
      static_cast<unsigned long long>(distinct));

  // Ours in a fresh process, for peak RSS (load the binary corpus + train once).
  const std::string bin = dir + "/corpus.bin";
  long our_rss_kb = 0;
  if (WriteBinary(corpus, bin)) {
    const ChildRun child = launcher.Run({SelfExe(), "--child-train", bin, std::to_string(vocab)},
                                        dir + "/child.out", dir + "/child.err");
    if (child.status == 0) {
      our_rss_kb = child.max_rss_kb;
      std::printf("teller TPE, fresh process (load + train): %.3f s wall, peak RSS %.1f MB\n",
                  child.seconds, static_cast<double>(child.max_rss_kb) / 1024.0);
    }
  }

  if (run_spm) {
    const std::string input = dir + "/spm_input.txt";
    const size_t longest = WriteSpmInput(corpus, input);
    if (longest == 0) {
      std::fprintf(stderr, "tpe_benchmark: cannot write %s\n", input.c_str());
      return 1;
    }
    const std::vector<std::string> args = {spm,
                                           "--input=" + input,
                                           "--model_prefix=" + dir + "/spm",
                                           "--model_type=bpe",
                                           "--vocab_size=" + std::to_string(vocab),
                                           "--split_by_whitespace=false",
                                           "--character_coverage=1.0",
                                           "--max_sentence_length=" + std::to_string(longest + 16)};
    std::string cmd;
    for (const std::string& a : args) cmd += (cmd.empty() ? "" : " ") + a;
    std::printf("spm: %s\n", cmd.c_str());
    std::vector<double> spm_times;
    long spm_rss_kb = 0;
    for (int r = 0; r < spm_runs; ++r) {
      const ChildRun run = launcher.Run(args, dir + "/spm.out", dir + "/spm.log");
      if (run.status != 0) {
        std::fprintf(stderr, "tpe_benchmark: spm_train exited with %d (see %s/spm.log)\n",
                     run.status, dir.c_str());
        return 1;
      }
      spm_times.push_back(run.seconds);
      spm_rss_kb = std::max(spm_rss_kb, run.max_rss_kb);
      std::fprintf(stderr, "spm_train run %d: %.3f s, %.1f MB\n", r + 1, run.seconds,
                   static_cast<double>(run.max_rss_kb) / 1024.0);
    }
    const double spm_median = Median(spm_times);
    std::printf(
        "spm_train BPE: median %.3f s over %d runs (min %.3f, max %.3f), peak RSS %.1f MB\n",
        spm_median, spm_runs, *std::min_element(spm_times.begin(), spm_times.end()),
        *std::max_element(spm_times.begin(), spm_times.end()),
        static_cast<double>(spm_rss_kb) / 1024.0);
    std::printf("ratio: spm / teller = %.1fx (target >= 4x); teller median %.3f s (target < 3 s)",
                spm_median / our_median, our_median);
    if (our_rss_kb > 0) {
      std::printf("; peak RSS teller %.1f MB vs spm %.1f MB",
                  static_cast<double>(our_rss_kb) / 1024.0,
                  static_cast<double>(spm_rss_kb) / 1024.0);
    }
    std::printf("\n");
  }
  if (keep.empty()) std::system(("rm -rf '" + dir + "'").c_str());
  return 0;
}
