// core/atomic_file.h: a regular file is replaced whole; a symlink is written through to its
// target (the link stays); a device is written in place (not replaced by a file); a
// directory is refused; an uncommitted write leaves nothing; stale temp files are removed
// only when their writer's pid is gone.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "core/atomic_file.h"
#include "core/error.h"

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/rg_atomic_XXXXXX";
    path = ::mkdtemp(name);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Whether `dir` holds exactly `n` entries (dot files included).
bool holds(const std::string& dir, int n) {
  const std::string test = "test $(ls -A '" + dir + "' | wc -l) -eq " + std::to_string(n);
  return std::system(test.c_str()) == 0;
}

}  // namespace

TEST_CASE("an atomic write replaces a regular file and leaves no temp file") {
  TempDir d;
  const std::string f = d.path + "/out.txt";
  rg::write_file_atomically(f, "one");
  rg::write_file_atomically(f, "two");
  CHECK(read(f) == "two");
  CHECK(holds(d.path, 1));
  {
    rg::AtomicFile unfinished(d.path + "/never.txt");
    unfinished.write("x", 1);
  }  // destroyed without commit
  CHECK(::access((d.path + "/never.txt").c_str(), F_OK) != 0);
  CHECK(holds(d.path, 1));
}

TEST_CASE("an atomic write through a symlink replaces its target and keeps the link") {
  TempDir d;
  REQUIRE(::mkdir((d.path + "/real").c_str(), 0755) == 0);
  REQUIRE(::symlink("real/target.txt", (d.path + "/link").c_str()) == 0);  // dangling
  REQUIRE(::symlink("link", (d.path + "/link2").c_str()) == 0);            // a chain
  rg::write_file_atomically(d.path + "/link2", "through");
  struct stat st {};
  REQUIRE(::lstat((d.path + "/link").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  REQUIRE(::lstat((d.path + "/link2").c_str(), &st) == 0);
  CHECK(S_ISLNK(st.st_mode));
  CHECK(read(d.path + "/real/target.txt") == "through");
  REQUIRE(::symlink("loop", (d.path + "/loop").c_str()) == 0);
  CHECK_THROWS_WITH_AS(rg::write_file_atomically(d.path + "/loop", "x"),
                       doctest::Contains("levels of symbolic links"), rg::Error);
}

TEST_CASE("an atomic write to a device writes in place; to a directory it is refused") {
  rg::write_file_atomically("/dev/null", "discarded");
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));
  if (::access("/dev/full", W_OK) == 0)  // writes fail with ENOSPC: the error says so
    CHECK_THROWS_WITH_AS(rg::write_file_atomically("/dev/full", "x"),
                         doctest::Contains("No space left on device"), rg::Error);
  TempDir d;
  CHECK_THROWS_WITH_AS(rg::write_file_atomically(d.path, "x"), doctest::Contains("is a directory"),
                       rg::Error);
  CHECK(holds(d.path, 0));
}

TEST_CASE("stale temp files are removed only when their writer has ended") {
  TempDir d;
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  ::waitpid(child, nullptr, 0);
  const std::string target = d.path + "/ckpt.bin";
  const std::string dead = d.path + "/.ckpt.bin.tmp." + std::to_string(child) + ".0";
  const std::string live = d.path + "/.ckpt.bin.tmp." + std::to_string(::getpid()) + ".3";
  std::ofstream(dead) << "x";
  std::ofstream(live) << "x";
  const auto removed = rg::remove_stale_temp_files(target);
  REQUIRE(removed.size() == 1);
  CHECK(removed[0] == dead);
  CHECK(::access(dead.c_str(), F_OK) != 0);
  CHECK(::access(live.c_str(), F_OK) == 0);
}
