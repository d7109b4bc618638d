#include "resident/measure/contention.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "resident/measure/threads.hpp"

namespace resident::measure {

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t copy_chunk = 4 * mib;     // memory hog: bytes between stop checks
constexpr std::size_t write_size = 1 * mib;     // file hog: one write()
constexpr std::size_t fsync_every = 4 * mib;    // file hog: bytes between fsyncs
constexpr std::size_t rewind_at = 256 * mib;    // file hog: file size before truncating
constexpr std::uint64_t spin_batch = 1u << 18;  // cpu hog: ~0.3 ms of dependent multiplies
constexpr auto stress_ng_grace = std::chrono::seconds(2);
constexpr long tmpfs_magic = 0x01021994;  // TMPFS_MAGIC (linux/magic.h)

std::string errno_text(int error) {
  char buffer[256];
  return ::strerror_r(error, buffer, sizeof buffer);  // GNU variant: thread-safe
}

std::string bytes_text(std::size_t bytes) {
  if (bytes >= mib && bytes % mib == 0) return std::to_string(bytes / mib) + " MiB";
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes / 1024) + " KiB";
  return std::to_string(bytes) + " B";
}

// A shell-pasteable rendering of argv, for descriptions and receipts.
std::string command_text(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    const bool plain = !a.empty() && a.find_first_of(" \t'\"\\$`") == std::string::npos;
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

std::string find_on_path(const std::string& program) {
  const char* env = std::getenv("PATH");
  const std::string path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  std::size_t at = 0;
  while (at <= path.size()) {
    std::size_t end = path.find(':', at);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end == at ? "." : path.substr(at, end - at);
    at = end + 1;
    const std::string candidate = dir + "/" + program;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

// Whether `child` has exited, leaving it a zombie (WNOWAIT) so its pid and process group stay
// reserved until waitpid(). A child something else already reaped counts as exited.
bool exited_unreaped(pid_t child, siginfo_t& info) {
  for (;;) {
    info = {};
    if (::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0) {
      return info.si_pid == child;
    }
    if (errno != EINTR) return true;  // ECHILD: reaped elsewhere (SIGCHLD ignored)
  }
}

void write_all(int fd, const std::byte* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error("write failed: " + errno_text(errno));
    }
    data += n;
    size -= static_cast<std::size_t>(n);
  }
}

}  // namespace

// One hog's resources. Owned by the generator, so a failed start() or stop() frees them all.
struct contention_generator::hog {
  hog_kind kind;
  int cpu;
  std::unique_ptr<std::byte[]> a, b;  // memory hog buffers
  int fd{-1};                         // file hog scratch file
  std::string path;

  hog(hog_kind k, int c) : kind(k), cpu(c) {}
  hog(const hog&) = delete;
  hog& operator=(const hog&) = delete;
  ~hog() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
  }

  [[nodiscard]] std::string name() const {
    const char* k = kind == hog_kind::memory ? "memory" : kind == hog_kind::file ? "file" : "cpu";
    return std::string(k) + " hog on cpu " + std::to_string(cpu);
  }
};

nlohmann::json to_json(const contention_activity& a) {
  return {{"bytes_copied", a.bytes_copied},
          {"bytes_written", a.bytes_written},
          {"fsyncs", a.fsyncs},
          {"spin_loops", a.spin_loops}};
}

contention_generator::contention_generator(contention_options options)
    : _options(std::move(options)) {
  if (_options.cpus.empty()) {
    throw std::invalid_argument(
        "contention: no cpus to load (are all allowed cores taken by measured threads?)");
  }
  const std::vector<int> online = online_cpu_list();
  const std::vector<int> allowed = allowed_cpus();
  std::vector<int> seen;
  for (const int cpu : _options.cpus) {
    if (std::find(online.begin(), online.end(), cpu) == online.end()) {
      throw std::invalid_argument(
          "contention: cpu " + std::to_string(cpu) + " is not online: this machine has " +
          std::to_string(online.size()) + " online cpus (" + cpu_list_text(online) + ")");
    }
    // A hog that cannot pin itself would float onto the measured threads' cores.
    if (std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      throw std::invalid_argument(
          "contention: cpu " + std::to_string(cpu) +
          " is not in this process's affinity mask (allowed cpus: " + cpu_list_text(allowed) + ")");
    }
    if (std::find(seen.begin(), seen.end(), cpu) != seen.end()) {
      throw std::invalid_argument("contention: cpu " + std::to_string(cpu) +
                                  " is listed twice (one hog per core)");
    }
    seen.push_back(cpu);
  }
  if (_options.memory_bytes == 0) {
    throw std::invalid_argument("contention: memory_bytes must be at least 1");
  }
  // One hog per core, kinds round-robin; at least one of each kind even on 1 or 2 cores.
  const std::size_t hogs = std::max<std::size_t>(3, _options.cpus.size());
  _memory_hogs = (hogs + 2) / 3;
  _file_hogs = (hogs + 1) / 3;
  _cpu_hogs = hogs / 3;
}

contention_generator::~contention_generator() { stop(); }

void contention_generator::start() {
  if (_running) throw std::logic_error("contention_generator::start: already running");
  _stop.store(false);
  for (auto* counter : {&_bytes_copied, &_bytes_written, &_fsyncs, &_spin_loops}) {
    counter->store(0, std::memory_order_relaxed);
  }
  {
    const std::lock_guard lock(_notes_mutex);
    _notes.clear();
  }
  if (_options.use_stress_ng) {
    start_stress_ng();
  } else {
    start_built_in();
  }
  _running = true;
}

void contention_generator::start_built_in() {
  const std::size_t count = _memory_hogs + _file_hogs + _cpu_hogs;
  if (count > _options.cpus.size()) {
    add_note(std::to_string(count) + " hogs share " + std::to_string(_options.cpus.size()) +
             " core" + (_options.cpus.size() == 1 ? "" : "s") +
             ": fewer cores than hog kinds, so each kind still runs once");
  }
  if (struct statfs fs{}; ::statfs(_options.scratch_dir.c_str(), &fs) == 0 &&
                          static_cast<long>(fs.f_type) == tmpfs_magic) {
    add_note("scratch_dir " + _options.scratch_dir.string() +
             " is on tmpfs: file hogs load memory, fsync reaches no disk");
  }

  // Everything that can fail is created here, on the caller's thread, so start() can throw.
  try {
    for (std::size_t i = 0; i < count; ++i) {
      const auto kind = static_cast<hog_kind>(i % 3);
      auto h = std::make_unique<hog>(kind, _options.cpus[i % _options.cpus.size()]);
      if (kind == hog_kind::memory) {
        // Left untouched: the hog writes them first, after pinning, so pages land on its node.
        h->a = std::make_unique_for_overwrite<std::byte[]>(_options.memory_bytes);
        h->b = std::make_unique_for_overwrite<std::byte[]>(_options.memory_bytes);
      } else if (kind == hog_kind::file) {
        std::string name = (_options.scratch_dir / "resident-contention-XXXXXX").string();
        h->fd = ::mkostemp(name.data(), O_CLOEXEC);
        if (h->fd < 0) {
          throw std::runtime_error("contention: cannot create a scratch file in " +
                                   _options.scratch_dir.string() + ": " + errno_text(errno));
        }
        h->path = name;
      }
      _hogs.push_back(std::move(h));
    }
    for (auto& h : _hogs) {
      hog* raw = h.get();
      _threads.emplace_back([this, raw] { run_hog(*raw); });
    }
  } catch (...) {
    _stop.store(true);
    for (auto& t : _threads) t.join();
    _threads.clear();
    _hogs.clear();
    throw;
  }
}

void contention_generator::run_hog(hog& h) noexcept {
  try {
    const thread_grant grant = configure_current_thread(h.cpu, false);
    if (!grant.pinned) {
      add_note(h.name() + " did not run: " + grant.note);
      return;
    }
    switch (h.kind) {
      case hog_kind::memory:
        run_memory(h);
        break;
      case hog_kind::file:
        run_file(h);
        break;
      case hog_kind::cpu:
        run_cpu();
        break;
    }
  } catch (const std::exception& e) {
    add_note(h.name() + " stopped early: " + e.what());
  } catch (...) {
    add_note(h.name() + " stopped early");
  }
}

void contention_generator::run_memory(hog& h) {
  const std::size_t size = _options.memory_bytes;
  const std::size_t chunk = std::min(size, copy_chunk);
  // Write the source first: untouched pages all map the shared zero page, which stays in cache.
  for (std::size_t at = 0; at < size; at += chunk) {
    if (_stop.load(std::memory_order_relaxed)) return;
    std::memset(h.a.get() + at, 0x5a, std::min(chunk, size - at));
  }
  std::byte* src = h.a.get();
  std::byte* dst = h.b.get();
  for (;;) {
    for (std::size_t at = 0; at < size; at += chunk) {
      if (_stop.load(std::memory_order_relaxed)) return;
      const std::size_t n = std::min(chunk, size - at);
      std::memcpy(dst + at, src + at, n);
      _bytes_copied.fetch_add(n, std::memory_order_relaxed);
    }
    std::swap(src, dst);
  }
}

void contention_generator::run_file(hog& h) {
  std::vector<std::byte> block(write_size, std::byte{0xa5});
  std::size_t since_sync = 0;
  std::size_t offset = 0;
  while (!_stop.load(std::memory_order_relaxed)) {
    write_all(h.fd, block.data(), block.size());
    _bytes_written.fetch_add(block.size(), std::memory_order_relaxed);
    since_sync += block.size();
    offset += block.size();
    if (since_sync >= fsync_every) {
      if (::fsync(h.fd) != 0) throw std::runtime_error("fsync failed: " + errno_text(errno));
      _fsyncs.fetch_add(1, std::memory_order_relaxed);
      since_sync = 0;
    }
    if (offset >= rewind_at) {
      if (::ftruncate(h.fd, 0) != 0 || ::lseek(h.fd, 0, SEEK_SET) != 0) {
        throw std::runtime_error("truncating the scratch file failed: " + errno_text(errno));
      }
      offset = 0;
    }
  }
}

void contention_generator::run_cpu() {
  std::uint64_t x = 0x9e3779b97f4a7c15u;
  while (!_stop.load(std::memory_order_relaxed)) {
    // A dependent multiply/xorshift chain: keeps the core's integer pipeline busy, and the
    // compiler can neither vectorize nor fold it.
    for (std::uint64_t i = 0; i < spin_batch; ++i) {
      x = x * 6364136223846793005u + 1442695040888963407u;
      x ^= x >> 29;
    }
    _spin_loops.fetch_add(spin_batch, std::memory_order_relaxed);
  }
  // Publish the result so the loop has an observable effect.
  static std::atomic<std::uint64_t> sink{0};
  sink.fetch_xor(x, std::memory_order_relaxed);
}

std::vector<std::string> contention_generator::stress_ng_arguments(
    const std::string& program) const {
  return {program,
          "--vm",
          std::to_string(_memory_hogs),
          "--vm-bytes",
          std::to_string(2 * _options.memory_bytes),  // the built-in hog's two buffers
          "--vm-keep",
          "--hdd",
          std::to_string(_file_hogs),
          "--hdd-bytes",
          std::to_string(rewind_at),
          "--hdd-write-size",
          std::to_string(write_size),
          "--hdd-opts",
          "fsync",
          "--cpu",
          std::to_string(_cpu_hogs),
          "--taskset",
          cpu_list_text(_options.cpus),
          "--temp-path",
          _options.scratch_dir.string(),
          "--timeout",
          "0"};  // 0: run until stopped
}

void contention_generator::start_stress_ng() {
  const std::string program = find_on_path("stress-ng");
  if (program.empty()) {
    const char* path = std::getenv("PATH");
    throw std::runtime_error(
        "contention: use_stress_ng is set but stress-ng is not installed (not found on PATH=" +
        std::string(path != nullptr ? path : "") + "); install stress-ng or use the built-in hogs");
  }
  _command = stress_ng_arguments(program);

  // Everything the child touches is prepared before fork(): after it only async-signal-safe
  // calls are allowed (this process has other threads).
  std::vector<char*> argv;
  for (auto& a : _command) argv.push_back(a.data());
  argv.push_back(nullptr);
  int exec_pipe[2];
  if (::pipe2(exec_pipe, O_CLOEXEC) != 0) {
    throw std::system_error(errno, std::generic_category(), "contention: pipe2");
  }
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  if (child < 0) {
    const int error = errno;
    ::close(exec_pipe[0]);
    ::close(exec_pipe[1]);
    throw std::system_error(error, std::generic_category(), "contention: fork for stress-ng");
  }
  if (child == 0) {
    ::setpgid(0, 0);  // its own group: stop() signals stress-ng and all its workers at once
    // Dies with the thread that started it, so a crashed benchmark leaves no hogs behind.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(127);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGTERM, &dfl, nullptr);
    ::sigaction(SIGINT, &dfl, nullptr);
    if (const int null = ::open("/dev/null", O_WRONLY); null >= 0) ::dup2(null, STDOUT_FILENO);
    ::execv(argv[0], argv.data());
    const int error = errno;
    [[maybe_unused]] const ssize_t ignored = ::write(exec_pipe[1], &error, sizeof error);
    ::_exit(127);
  }
  ::setpgid(child, child);  // also here: no race with the first kill()
  ::close(exec_pipe[1]);
  int exec_error = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  _child = child;
  if (n == sizeof exec_error) {
    stop_stress_ng();
    throw std::runtime_error("contention: cannot run " + program + ": " + errno_text(exec_error));
  }
  // A stress-ng that rejects an option exits at once: report that instead of a silent no-load.
  for (int i = 0; i < 20; ++i) {
    siginfo_t info{};
    if (exited_unreaped(child, info)) {
      stop_stress_ng();
      const bool exited_normally = info.si_code == CLD_EXITED;
      throw std::runtime_error("contention: stress-ng exited at once (" +
                               std::string(exited_normally ? "status " : "signal ") +
                               std::to_string(info.si_status) + "); run `" +
                               command_text(_command) + "` to see why");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void contention_generator::stop_stress_ng() noexcept {
  if (_child <= 0) return;
  ::kill(-_child, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + stress_ng_grace;
  bool exited = false;
  siginfo_t info{};
  while (!(exited = exited_unreaped(_child, info)) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The leader is still unreaped, so its pid cannot name another group yet: kill any worker that
  // outlived it (or, after the grace period, everything), then reap.
  ::kill(-_child, SIGKILL);
  int status = 0;
  while (::waitpid(_child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!exited) {
    try {
      add_note("stress-ng ignored SIGTERM for " + std::to_string(stress_ng_grace.count()) +
               " s and was killed; it may have left files under " + _options.scratch_dir.string());
    } catch (...) {
      // Out of memory for a note: the kill itself succeeded.
    }
  }
  _child = -1;
}

void contention_generator::stop() noexcept {
  if (!_running) return;
  _stop.store(true);
  for (auto& t : _threads) {
    try {
      if (t.joinable()) t.join();
    } catch (...) {
      // join() throws only for a thread that is not joinable, checked above.
    }
  }
  _threads.clear();
  _hogs.clear();  // closes and removes the scratch files, frees the buffers
  stop_stress_ng();
  _running = false;
}

contention_activity contention_generator::activity() const noexcept {
  return {_bytes_copied.load(std::memory_order_relaxed),
          _bytes_written.load(std::memory_order_relaxed), _fsyncs.load(std::memory_order_relaxed),
          _spin_loops.load(std::memory_order_relaxed)};
}

void contention_generator::add_note(std::string note) {
  const std::lock_guard lock(_notes_mutex);
  _notes.push_back(std::move(note));
}

std::vector<std::string> contention_generator::notes() const {
  const std::lock_guard lock(_notes_mutex);
  return _notes;
}

std::string contention_generator::description() const {
  if (_options.use_stress_ng) {
    return command_text(_command.empty() ? stress_ng_arguments("stress-ng") : _command);
  }
  const std::size_t hogs = _memory_hogs + _file_hogs + _cpu_hogs;
  std::string out = "built-in: " + std::to_string(_memory_hogs) + " memory (2 x " +
                    bytes_text(_options.memory_bytes) + " each), " + std::to_string(_file_hogs) +
                    " file (fsync), " + std::to_string(_cpu_hogs) + " cpu hogs on cpus " +
                    cpu_list_text(_options.cpus);
  if (hogs > _options.cpus.size()) out += " (" + std::to_string(hogs) + " hogs share them)";
  return out;
}

nlohmann::json contention_generator::to_json() const {
  return {{"kind", _options.use_stress_ng ? "stress-ng" : "built-in"},
          {"cpus", _options.cpus},
          {"memory_hogs", _memory_hogs},
          {"file_hogs", _file_hogs},
          {"cpu_hogs", _cpu_hogs},
          {"memory_bytes", _options.memory_bytes},
          {"scratch_dir", _options.scratch_dir.string()},
          {"command", _options.use_stress_ng ? nlohmann::json(description()) : nlohmann::json()},
          {"description", description()},
          {"running", _running},
          {"activity", measure::to_json(activity())},
          {"notes", notes()}};
}

std::unique_ptr<contention_generator> start_stress(std::vector<int> cpus, bool use_stress_ng,
                                                   const std::string& pinned) {
  if (cpus.empty()) {
    throw std::invalid_argument("--contention stress: no cores left for the hogs after pinning " +
                                pinned);
  }
  contention_options options;
  options.cpus = std::move(cpus);
  options.use_stress_ng = use_stress_ng;
  auto hogs = std::make_unique<contention_generator>(options);
  hogs->start();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the hogs reach steady state
  return hogs;
}

}  // namespace resident::measure
