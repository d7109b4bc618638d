#include "resident/measure/threads.hpp"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>

namespace resident::measure {

namespace {

std::string errno_text(int error) {
  char buffer[256];
  // GNU strerror_r: thread-safe, returns the message (possibly not in `buffer`).
  return ::strerror_r(error, buffer, sizeof buffer);
}

std::string policy_name(int policy) {
  switch (policy) {
    case SCHED_FIFO:
      return "SCHED_FIFO";
    case SCHED_OTHER:
      return "SCHED_OTHER";
    case SCHED_RR:
      return "SCHED_RR";
    case SCHED_BATCH:
      return "SCHED_BATCH";
    case SCHED_IDLE:
      return "SCHED_IDLE";
    default:
      return "policy " + std::to_string(policy);
  }
}

void append_note(std::string& note, const std::string& text) {
  note += (note.empty() ? "" : "; ") + text;
}

// A dynamically sized cpu_set_t: machines with more than CPU_SETSIZE (1024) cpus exist.
class cpu_set {
 public:
  explicit cpu_set(int cpus)
      : _count(std::max(cpus, CPU_SETSIZE)),
        _set(CPU_ALLOC(_count)),
        _bytes(CPU_ALLOC_SIZE(_count)) {
    if (_set == nullptr) throw std::bad_alloc();
    CPU_ZERO_S(_bytes, _set.get());
  }
  [[nodiscard]] cpu_set_t* get() const noexcept { return _set.get(); }
  [[nodiscard]] std::size_t bytes() const noexcept { return _bytes; }
  [[nodiscard]] int count() const noexcept { return _count; }

 private:
  struct deleter {
    void operator()(cpu_set_t* s) const noexcept { CPU_FREE(s); }
  };
  int _count;
  std::unique_ptr<cpu_set_t, deleter> _set;
  std::size_t _bytes;
};

// Parses the kernel's cpu list format ("0-3,8,10-11").
std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find(',', at);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(at, end - at);
    at = end + 1;
    if (item.find_first_not_of(" \n") == std::string::npos) continue;
    const std::size_t dash = item.find('-');
    const int first = std::stoi(item.substr(0, dash));
    const int last = dash == std::string::npos ? first : std::stoi(item.substr(dash + 1));
    for (int c = first; c <= last; ++c) cpus.push_back(c);
  }
  return cpus;
}

}  // namespace

std::vector<int> online_cpu_list() {
  std::ifstream file("/sys/devices/system/cpu/online");
  std::string text;
  if (file && std::getline(file, text)) {
    try {
      std::vector<int> cpus = parse_cpu_list(text);
      if (!cpus.empty()) return cpus;
    } catch (const std::exception&) {
      // Unreadable format: fall back to counting.
    }
  }
  std::vector<int> cpus(static_cast<std::size_t>(std::max(online_cpus(), 1)));
  for (std::size_t i = 0; i < cpus.size(); ++i) cpus[i] = static_cast<int>(i);
  return cpus;
}

namespace {

void require_online(int cpu) {
  const std::vector<int> online = online_cpu_list();
  if (std::find(online.begin(), online.end(), cpu) != online.end()) return;
  throw std::invalid_argument("cpu " + std::to_string(cpu) + " is not online: this machine has " +
                              std::to_string(online.size()) + " online cpus (" +
                              cpu_list_text(online) + ")");
}

std::string fifo_refusal_hint(int error) {
  if (error != EPERM) return "";
  rlimit limit{};
  std::string rtprio = "unknown";
  if (::getrlimit(RLIMIT_RTPRIO, &limit) == 0) {
    rtprio = limit.rlim_cur == RLIM_INFINITY ? "unlimited" : std::to_string(limit.rlim_cur);
  }
  return " (needs CAP_SYS_NICE or a high enough RLIMIT_RTPRIO, which is " + rtprio +
         "; containers often drop CAP_SYS_NICE even for root)";
}

long read_long(const char* path) {
  std::ifstream file(path);
  long value = 0;
  return (file >> value) ? value : -2;
}

// A FIFO thread is not absolute: unless RT throttling is off, runnable lower-priority tasks on its
// core get the rest of each period (50 ms a second by default). Worth a line in the receipt.
std::string rt_throttling_caveat() {
  const long runtime = read_long("/proc/sys/kernel/sched_rt_runtime_us");
  const long period = read_long("/proc/sys/kernel/sched_rt_period_us");
  if (runtime < 0 || period <= 0 || runtime >= period) return "";
  return "RT throttling is on (sched_rt_runtime_us " + std::to_string(runtime) + " of " +
         std::to_string(period) + "): other runnable tasks on this core still get " +
         std::to_string((period - runtime) / 1000) + " ms of every " +
         std::to_string(period / 1000) + " ms";
}

}  // namespace

nlohmann::json to_json(const thread_grant& g) {
  return {{"cpu", g.cpu},
          {"pinned", g.pinned},
          {"policy", g.policy},
          {"priority", g.priority},
          {"note", g.note}};
}

std::string cpu_list_text(const std::vector<int>& cpus) {
  std::string out;
  for (const int c : cpus) {
    if (!out.empty()) out += ',';
    out += std::to_string(c);
  }
  return out.empty() ? "none" : out;
}

int online_cpus() { return static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)); }

std::vector<int> allowed_cpus() {
  int count = std::max(static_cast<int>(::sysconf(_SC_NPROCESSORS_CONF)), CPU_SETSIZE);
  for (;;) {
    cpu_set set(count);
    // getpid() names the main thread: the process's mask even when the caller is pinned.
    if (::sched_getaffinity(::getpid(), set.bytes(), set.get()) == 0) {
      std::vector<int> cpus;
      for (int c = 0; c < set.count(); ++c) {
        if (CPU_ISSET_S(c, set.bytes(), set.get())) cpus.push_back(c);
      }
      return cpus;
    }
    if (errno != EINVAL || count > (1 << 20)) {
      throw std::runtime_error("sched_getaffinity failed: " + errno_text(errno));
    }
    count *= 2;  // the kernel's mask is larger than ours
  }
}

thread_grant configure_current_thread(int cpu, bool realtime, int priority) {
  if (cpu < -1) {
    throw std::invalid_argument("cpu " + std::to_string(cpu) +
                                " is not a cpu number (use -1 to leave the thread unpinned)");
  }
  if (realtime) {
    const int lo = ::sched_get_priority_min(SCHED_FIFO);
    const int hi = ::sched_get_priority_max(SCHED_FIFO);
    if (priority < lo || priority > hi) {
      throw std::invalid_argument("SCHED_FIFO priority " + std::to_string(priority) +
                                  " is outside " + std::to_string(lo) + ".." + std::to_string(hi));
    }
  }
  thread_grant grant;
  const pthread_t self = ::pthread_self();

  if (cpu >= 0) {
    require_online(cpu);
    cpu_set set(cpu + 1);
    CPU_SET_S(cpu, set.bytes(), set.get());
    const int rc = ::pthread_setaffinity_np(self, set.bytes(), set.get());
    if (rc == 0) {
      grant.cpu = cpu;
      grant.pinned = true;
    } else {
      append_note(grant.note, "pinning to cpu " + std::to_string(cpu) +
                                  " refused: " + errno_text(rc) +
                                  " (allowed cpus: " + cpu_list_text(allowed_cpus()) + ")");
    }
  }

  int policy = SCHED_OTHER;
  sched_param param{};
  ::pthread_getschedparam(self, &policy, &param);
  if (realtime) {
    sched_param want{};
    want.sched_priority = priority;
    const int rc = ::pthread_setschedparam(self, SCHED_FIFO, &want);
    if (rc != 0) {
      append_note(grant.note, "SCHED_FIFO refused: " + errno_text(rc) + fifo_refusal_hint(rc));
    }
  } else if (policy != SCHED_OTHER) {
    // Inherited from the creating thread: drop it, a hog must never outrank the measured threads.
    sched_param other{};
    const int rc = ::pthread_setschedparam(self, SCHED_OTHER, &other);
    if (rc != 0) {
      append_note(grant.note,
                  "could not leave inherited " + policy_name(policy) + ": " + errno_text(rc));
    }
  }

  // Report what the thread has now, not what was asked for.
  ::pthread_getschedparam(self, &policy, &param);
  grant.policy = policy_name(policy);
  grant.priority = (policy == SCHED_FIFO || policy == SCHED_RR) ? param.sched_priority : 0;
  if (policy == SCHED_FIFO) {
    if (const std::string caveat = rt_throttling_caveat(); !caveat.empty()) {
      append_note(grant.note, caveat);
    }
  }
  return grant;
}

std::map<std::string, int> assign_cpus(const std::vector<std::pair<std::string, int>>& requested) {
  const std::vector<int> allowed = allowed_cpus();
  std::string roles;
  for (const auto& [role, cpu] : requested) roles += (roles.empty() ? "" : ", ") + role;

  std::set<std::string> names;
  for (const auto& [role, cpu] : requested) {
    if (!names.insert(role).second) {
      throw std::invalid_argument("thread role '" + role + "' is listed twice");
    }
    if (cpu < -1) {
      throw std::invalid_argument("thread '" + role + "' asks for cpu " + std::to_string(cpu) +
                                  "; use a cpu number, or -1 to choose automatically");
    }
    if (cpu >= 0 && std::find(allowed.begin(), allowed.end(), cpu) == allowed.end()) {
      throw std::invalid_argument(
          "thread '" + role + "' asks for cpu " + std::to_string(cpu) +
          ", which this process may not use (allowed cpus: " + cpu_list_text(allowed) + ")");
    }
  }
  if (requested.size() > allowed.size()) {
    throw std::invalid_argument(std::to_string(requested.size()) +
                                " threads need pinning but only " + std::to_string(allowed.size()) +
                                " cores are available: threads " + roles + "; allowed cpus " +
                                cpu_list_text(allowed) +
                                " (pin fewer threads or run on a machine with more cores)");
  }

  std::map<std::string, int> out;
  std::map<int, std::string> owner;
  for (const auto& [role, cpu] : requested) {
    if (cpu < 0) continue;
    if (const auto it = owner.find(cpu); it != owner.end()) {
      throw std::invalid_argument("threads '" + it->second + "' and '" + role +
                                  "' both ask for cpu " + std::to_string(cpu) +
                                  "; each pinned thread needs its own core");
    }
    owner[cpu] = role;
    out[role] = cpu;
  }
  // Auto roles take the highest free cpus first: cpu 0 usually services interrupts.
  auto next = allowed.rbegin();
  for (const auto& [role, cpu] : requested) {
    if (cpu >= 0) continue;
    while (owner.contains(*next)) ++next;  // the count check guarantees a free one
    owner[*next] = role;
    out[role] = *next;
  }
  return out;
}

bool confine_process(const std::vector<int>& cpus) {
  if (cpus.empty()) return false;
  cpu_set_t mask;
  CPU_ZERO(&mask);
  for (const int cpu : cpus) CPU_SET(cpu, &mask);
  return sched_setaffinity(0, sizeof(mask), &mask) == 0;
}

std::vector<int> remaining_cpus(const std::vector<int>& used) {
  std::vector<int> out;
  for (const int c : allowed_cpus()) {
    if (std::find(used.begin(), used.end(), c) == used.end()) out.push_back(c);
  }
  return out;
}

}  // namespace resident::measure
