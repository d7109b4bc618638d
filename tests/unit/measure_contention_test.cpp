// The host contention generator: built-in hogs on 1-2 cores with small buffers (seconds in all),
// and the stress-ng path against fake stress-ng scripts, so it runs without stress-ng installed.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "resident/measure/contention.hpp"
#include "resident/measure/threads.hpp"
#include "test_operators.hpp"

namespace resident::test {
namespace {

namespace fs = std::filesystem;
using measure::contention_activity;
using measure::contention_generator;
using measure::contention_options;
using ::testing::HasSubstr;
using clock_type = std::chrono::steady_clock;

bool on_tmpfs(const fs::path& p) {
  struct statfs st {};
  return statfs(p.c_str(), &st) == 0 && static_cast<long>(st.f_type) == 0x01021994;
}

fs::path make_temp_dir(const fs::path& base) {
  std::string name = (base / "resident-contention-test-XXXXXX").string();
  if (mkdtemp(name.data()) == nullptr) throw std::runtime_error("mkdtemp in " + base.string());
  return name;
}

// Most tests write to tmpfs: fsync there returns at once, so stop() timings do not depend on how
// busy the CI machine's disk is. One test writes to the real temp dir.
class contention : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path shm = "/dev/shm";
    _scratch = make_temp_dir(on_tmpfs(shm) ? shm : fs::temp_directory_path());
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(_scratch, ignored);
  }

  [[nodiscard]] contention_options options(std::size_t cpus) const {
    const std::vector<int> allowed = measure::allowed_cpus();
    contention_options o;
    // The highest cpus, as the benchmark hands them out after assign_cpus().
    o.cpus.assign(allowed.end() - static_cast<std::ptrdiff_t>(std::min(cpus, allowed.size())),
                  allowed.end());
    o.memory_bytes = 1u << 20;
    o.scratch_dir = _scratch;
    return o;
  }

  [[nodiscard]] std::size_t files_in_scratch() const {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry : fs::directory_iterator(_scratch)) ++n;
    return n;
  }

  fs::path _scratch;
};

bool every_kind_worked(const contention_activity& a) {
  return a.bytes_copied > 0 && a.bytes_written > 0 && a.fsyncs > 0 && a.spin_loops > 0;
}

// Polls rather than sleeping a fixed time: a slow disk may take a while for the first fsync.
contention_activity wait_for_every_kind(const contention_generator& g) {
  const auto deadline = clock_type::now() + std::chrono::seconds(10);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  while (!every_kind_worked(g.activity()) && clock_type::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return g.activity();
}

void expect_every_kind_worked(const contention_activity& a) {
  EXPECT_GT(a.bytes_copied, 0u);
  EXPECT_GT(a.bytes_written, 0u);
  EXPECT_GT(a.fsyncs, 0u);
  EXPECT_GT(a.spin_loops, 0u);
}

void check_start_and_stop(contention_generator& g, std::size_t file_hogs,
                          const std::function<std::size_t()>& files) {
  EXPECT_FALSE(g.running());
  g.start();
  EXPECT_TRUE(g.running());
  expect_every_kind_worked(wait_for_every_kind(g));
  EXPECT_EQ(files(), file_hogs) << "one scratch file per file hog while running";

  const auto before = clock_type::now();
  g.stop();
  const auto took = clock_type::now() - before;
  EXPECT_LT(took, std::chrono::milliseconds(500))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  EXPECT_FALSE(g.running());
  EXPECT_EQ(files(), 0u) << "scratch files are removed at stop";

  const contention_activity after = g.activity();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_EQ(g.activity().spin_loops, after.spin_loops) << "nothing runs after stop()";
  EXPECT_EQ(g.activity().bytes_copied, after.bytes_copied);
}

TEST_F(contention, one_core_still_runs_one_hog_of_each_kind) {
  contention_generator g(options(1));
  EXPECT_EQ(g.memory_hogs(), 1u);
  EXPECT_EQ(g.file_hogs(), 1u);
  EXPECT_EQ(g.cpu_hogs(), 1u);
  check_start_and_stop(g, 1, [this] { return files_in_scratch(); });
  EXPECT_THAT(g.notes(), ::testing::Contains(HasSubstr("3 hogs share 1 core")));
}

TEST_F(contention, two_cores_start_and_stop) {
  if (measure::allowed_cpus().size() < 2) GTEST_SKIP() << "needs 2 allowed cpus";
  contention_generator g(options(2));
  EXPECT_EQ(g.memory_hogs() + g.file_hogs() + g.cpu_hogs(), 3u);
  check_start_and_stop(g, 1, [this] { return files_in_scratch(); });
}

TEST_F(contention, every_allowed_core_splits_round_robin) {
  const std::size_t n = measure::allowed_cpus().size();
  contention_generator g(options(n));
  const std::size_t hogs = std::max<std::size_t>(n, 3);
  EXPECT_EQ(g.memory_hogs(), (hogs + 2) / 3);
  EXPECT_EQ(g.file_hogs(), (hogs + 1) / 3);
  EXPECT_EQ(g.cpu_hogs(), hogs / 3);
  check_start_and_stop(g, g.file_hogs(), [this] { return files_in_scratch(); });
}

TEST_F(contention, file_hog_fsyncs_on_the_temp_dir_disk) {
  const fs::path disk = make_temp_dir(fs::temp_directory_path());
  contention_options o = options(1);
  o.scratch_dir = disk;
  {
    contention_generator g(o);
    g.start();
    expect_every_kind_worked(wait_for_every_kind(g));
    const auto before = clock_type::now();
    g.stop();
    // An fsync in flight finishes first: allow a slow disk its time.
    EXPECT_LT(clock_type::now() - before, std::chrono::seconds(3));
    EXPECT_TRUE(fs::is_empty(disk)) << "scratch files are removed at stop";
    const std::vector<std::string> notes = g.notes();
    const bool tmpfs_noted = std::any_of(notes.begin(), notes.end(), [](const std::string& n) {
      return n.find("is on tmpfs") != std::string::npos;
    });
    EXPECT_EQ(tmpfs_noted, on_tmpfs(disk));
  }
  fs::remove_all(disk);
}

TEST_F(contention, a_tmpfs_scratch_dir_is_noted) {
  if (!on_tmpfs(_scratch)) GTEST_SKIP() << "no tmpfs here";
  contention_generator g(options(1));
  g.start();
  g.stop();
  EXPECT_THAT(g.notes(), ::testing::Contains(HasSubstr("is on tmpfs: file hogs load memory")));
}

TEST_F(contention, can_start_again_after_stop_with_fresh_counters) {
  contention_generator g(options(1));
  g.start();
  (void)wait_for_every_kind(g);
  g.stop();
  const std::uint64_t first_run = g.activity().spin_loops;
  g.start();
  EXPECT_LE(g.activity().spin_loops, first_run);
  expect_every_kind_worked(wait_for_every_kind(g));
  g.stop();
}

TEST_F(contention, starting_twice_is_a_logic_error) {
  contention_generator g(options(1));
  g.start();
  EXPECT_THAT(error_of<std::logic_error>([&] { g.start(); }), HasSubstr("already running"));
  EXPECT_TRUE(g.running());
  g.stop();
  g.stop();  // stopping a stopped generator is fine
}

TEST_F(contention, destructor_stops_a_running_generator) {
  const auto before = [&] {
    contention_generator g(options(1));
    g.start();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(files_in_scratch(), 1u);
    return clock_type::now();
  }();
  EXPECT_LT(clock_type::now() - before, std::chrono::milliseconds(500));
  EXPECT_EQ(files_in_scratch(), 0u);
}

TEST_F(contention, invalid_cpus_are_rejected) {
  contention_options o = options(1);
  o.cpus = {};
  EXPECT_THAT(error_of<std::invalid_argument>([&] { contention_generator g(o); }),
              HasSubstr("no cpus"));
  o.cpus = {100000};
  const std::string offline = error_of<std::invalid_argument>([&] { contention_generator g(o); });
  EXPECT_THAT(offline, HasSubstr("cpu 100000 is not online"));
  EXPECT_THAT(offline, HasSubstr(std::to_string(measure::online_cpus()) + " online cpus"));
  o.cpus = {-1};
  EXPECT_THAT(error_of<std::invalid_argument>([&] { contention_generator g(o); }),
              HasSubstr("cpu -1 is not online"));
  const int cpu = measure::allowed_cpus().front();
  o.cpus = {cpu, cpu};
  EXPECT_THAT(error_of<std::invalid_argument>([&] { contention_generator g(o); }),
              HasSubstr("listed twice"));
}

TEST_F(contention, zero_memory_bytes_is_rejected) {
  contention_options o = options(1);
  o.memory_bytes = 0;
  EXPECT_THAT(error_of<std::invalid_argument>([&] { contention_generator g(o); }),
              HasSubstr("memory_bytes"));
}

TEST_F(contention, a_missing_scratch_dir_fails_start_and_leaves_nothing_running) {
  contention_options o = options(1);
  o.scratch_dir = _scratch / "missing";
  contention_generator g(o);
  EXPECT_THAT(error_of<std::runtime_error>([&] { g.start(); }),
              HasSubstr("cannot create a scratch file in " + o.scratch_dir.string()));
  EXPECT_FALSE(g.running());
  EXPECT_EQ(g.activity().spin_loops, 0u);
}

TEST_F(contention, description_and_json_name_the_hogs) {
  contention_generator g(options(1));
  const std::string cpu = std::to_string(g.options().cpus.front());
  EXPECT_EQ(g.description(),
            "built-in: 1 memory (2 x 1 MiB each), 1 file (fsync), 1 cpu hogs on cpus " + cpu +
                " (3 hogs share them)");
  g.start();
  (void)wait_for_every_kind(g);
  g.stop();
  const nlohmann::json j = g.to_json();
  EXPECT_EQ(j.at("kind"), "built-in");
  EXPECT_EQ(j.at("cpus"), nlohmann::json(g.options().cpus));
  EXPECT_EQ(j.at("memory_hogs"), 1);
  EXPECT_EQ(j.at("file_hogs"), 1);
  EXPECT_EQ(j.at("cpu_hogs"), 1);
  EXPECT_TRUE(j.at("command").is_null());
  EXPECT_EQ(j.at("running"), false);
  EXPECT_GT(j.at("activity").at("bytes_copied").get<std::uint64_t>(), 0u);
  EXPECT_GT(j.at("activity").at("fsyncs").get<std::uint64_t>(), 0u);
  EXPECT_TRUE(j.at("notes").is_array());
}

// ---- stress-ng --------------------------------------------------------------------------------

bool stress_ng_installed() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "";
  std::size_t at = 0;
  while (at <= dirs.size()) {
    std::size_t end = dirs.find(':', at);
    if (end == std::string::npos) end = dirs.size();
    if (access((dirs.substr(at, end - at) + "/stress-ng").c_str(), X_OK) == 0) return true;
    at = end + 1;
  }
  return false;
}

TEST_F(contention, stress_ng_missing_fails_start_with_a_clear_message) {
  if (stress_ng_installed()) GTEST_SKIP() << "stress-ng is installed here";
  contention_options o = options(1);
  o.use_stress_ng = true;
  contention_generator g(o);
  EXPECT_THAT(error_of<std::runtime_error>([&] { g.start(); }),
              HasSubstr("stress-ng is not installed"));
  EXPECT_FALSE(g.running());
}

// Puts a fake `stress-ng` first on PATH for the test's duration.
class fake_stress_ng {
 public:
  fake_stress_ng(const fs::path& dir, const std::string& body) : _dir(dir / "bin") {
    fs::create_directories(_dir);
    const fs::path script = _dir / "stress-ng";
    std::ofstream(script) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(script, fs::perms::owner_all);
    const char* path = std::getenv("PATH");
    _saved = path != nullptr ? path : "";
    setenv("PATH", (_dir.string() + ":" + _saved).c_str(), 1);
  }
  ~fake_stress_ng() { setenv("PATH", _saved.c_str(), 1); }
  fake_stress_ng(const fake_stress_ng&) = delete;
  fake_stress_ng& operator=(const fake_stress_ng&) = delete;

 private:
  fs::path _dir;
  std::string _saved;
};

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST_F(contention, stress_ng_runs_in_its_own_group_and_stops_on_sigterm) {
  const fs::path args = _scratch / "args";
  const fake_stress_ng fake(_scratch, "echo \"$@\" > '" + args.string() + "'\nexec sleep 30");
  contention_options o = options(1);
  o.use_stress_ng = true;
  contention_generator g(o);
  g.start();
  EXPECT_TRUE(g.running());
  const std::string cpus = measure::cpu_list_text(o.cpus);
  EXPECT_THAT(read_text(args), HasSubstr("--vm 1 --vm-bytes 2097152"));
  EXPECT_THAT(read_text(args), HasSubstr("--hdd 1"));
  EXPECT_THAT(read_text(args), HasSubstr("--cpu 1 --taskset " + cpus));
  EXPECT_THAT(read_text(args), HasSubstr("--timeout 0"));
  EXPECT_THAT(g.description(), HasSubstr((_scratch / "bin" / "stress-ng").string() + " --vm 1"));
  EXPECT_EQ(g.to_json().at("kind"), "stress-ng");
  EXPECT_EQ(g.to_json().at("command"), g.description());

  const auto before = clock_type::now();
  g.stop();
  EXPECT_LT(clock_type::now() - before, std::chrono::milliseconds(1000));
  EXPECT_FALSE(g.running());
  EXPECT_TRUE(g.notes().empty()) << g.notes().front();
}

// A killed orphan may linger as a zombie when the container's init does not reap it.
bool gone_or_zombie(pid_t pid) {
  for (int i = 0; i < 50; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!stat || !std::getline(stat, text)) return true;
    const std::size_t paren = text.rfind(')');
    if (paren != std::string::npos && text.substr(paren + 2, 1) == "Z") return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_F(contention, stress_ng_that_ignores_sigterm_is_killed) {
  const fs::path pid_file = _scratch / "pid";
  // The shell and its sleep both ignore SIGTERM; SIGKILL to the group ends both.
  const fake_stress_ng fake(
      _scratch, "trap '' TERM\nsleep 30 &\necho $! > '" + pid_file.string() + "'\nwait");
  contention_options o = options(1);
  o.use_stress_ng = true;
  contention_generator g(o);
  g.start();
  g.stop();  // waits the 2 s grace period
  EXPECT_FALSE(g.running());
  EXPECT_THAT(g.notes(), ::testing::Contains(HasSubstr("was killed")));
  const pid_t sleeper = std::stoi(read_text(pid_file));
  EXPECT_TRUE(gone_or_zombie(sleeper)) << "the worker in stress-ng's group was killed too";
}

TEST_F(contention, stress_ng_that_exits_at_once_fails_start) {
  const fake_stress_ng fake(_scratch, "exit 3");
  contention_options o = options(1);
  o.use_stress_ng = true;
  contention_generator g(o);
  EXPECT_THAT(error_of<std::runtime_error>([&] { g.start(); }),
              HasSubstr("stress-ng exited at once (status 3)"));
  EXPECT_FALSE(g.running());
}

}  // namespace
}  // namespace resident::test
