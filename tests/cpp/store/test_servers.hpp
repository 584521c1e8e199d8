// Real servers for the object store tests, started by the tests on loopback: nginx serving a
// directory, moto's S3 API server, and the tests' own fault-injecting proxy. Each runs as a
// child process that dies with the test (PR_SET_PDEATHSIG) and is stopped when the test
// process ends. Ports are picked free and waited for with a deadline, never a fixed sleep.
#pragma once

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/http/transport.hpp"
#include "store/s3/s3_config.hpp"

namespace cubestream::test {

namespace fs = std::filesystem;

inline fs::path scratch_dir(const std::string& tag) {
  static int n = 0;
  auto p = fs::temp_directory_path() / ("cs_objstore_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

// The first executable named `name` on PATH (plus the sbin folders, where Debian puts nginx).
inline std::optional<std::string> find_program(const std::string& name) {
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  path += ":/usr/sbin:/sbin:/usr/local/sbin";
  std::stringstream ss(path);
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return std::nullopt;
}

// A child process; its stdin is a pipe held open by us (helpers exit when it closes), its
// stdout a pipe we read lines from, its stderr a log file.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& log) : log_(log) {
    int in[2], out[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    // Everything the child needs is prepared before fork(): after it, only async-signal-safe
    // calls (the test binary may have threads).
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const std::string log_path = log.string();
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      int err = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (err >= 0) ::dup2(err, 2);
      ::execvp(args[0], args.data());
      ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    stdin_ = in[1];
    stdout_ = out[0];
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  ~Child() {
    if (stdin_ >= 0) ::close(stdin_);
    if (running()) {
      ::kill(pid_, SIGTERM);
      for (int i = 0; i < 200 && running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (running()) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    if (stdout_ >= 0) ::close(stdout_);
  }

  bool running() {
    if (exited_) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
    return !exited_;
  }

  // The next line the child prints, or nullopt when it exits or the deadline passes.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[4096];
      ssize_t n = ::read(stdout_, buf, sizeof buf);
      if (n <= 0) return std::nullopt;
      buffer_.append(buf, static_cast<std::size_t>(n));
    }
  }

  std::string log_text() const {
    std::ifstream f(log_);
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
  }

 private:
  pid_t pid_ = -1;
  int stdin_ = -1, stdout_ = -1;
  bool exited_ = false;
  std::string buffer_;
  fs::path log_;
};

inline int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

inline bool port_open(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  ::close(fd);
  return ok;
}

// Waits until `port` accepts connections; false when `child` exits first or time runs out.
inline bool wait_for_port(int port, Child& child, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (port_open(port)) return true;
    if (!child.running()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// nginx serving `root` on 127.0.0.1. Directories answer 404 (try_files checks files only),
// as a key that is only a prefix holds no value. Its access log records, per request, nginx's
// connection serial number, so tests can count the connections a client used.
class Nginx {
 public:
  explicit Nginx(const fs::path& root) : root_(root) {}

  // Starts nginx; returns an empty string, or why it could not start.
  std::string start() {
    auto bin = find_program("nginx");
    if (!bin) return "skip";
    dir_ = scratch_dir("nginx");
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = free_port();
      {
        std::ofstream conf(dir_ / "nginx.conf");
        // Run as root (CI containers), nginx would switch workers to "nobody": keep our user.
        if (::geteuid() == 0) conf << "user root;\n";
        conf << "worker_processes 1;\n"
             << "error_log " << (dir_ / "error.log").string() << " warn;\n"
             << "pid " << (dir_ / "nginx.pid").string() << ";\n"
             << "events { worker_connections 512; }\n"
             << "http {\n"
             << "  log_format conn '$connection $request_method $request_uri $status';\n"
             << "  access_log " << (dir_ / "access.log").string() << " conn;\n"
             << "  default_type application/octet-stream;\n"
             << "  client_body_temp_path " << (dir_ / "body").string() << ";\n"
             << "  proxy_temp_path " << (dir_ / "proxy").string() << ";\n"
             << "  fastcgi_temp_path " << (dir_ / "fastcgi").string() << ";\n"
             << "  uwsgi_temp_path " << (dir_ / "uwsgi").string() << ";\n"
             << "  scgi_temp_path " << (dir_ / "scgi").string() << ";\n"
             << "  keepalive_requests 100000;\n"
             << "  server {\n"
             << "    listen 127.0.0.1:" << port_ << ";\n"
             << "    root " << fs::absolute(root_).string() << ";\n"
             << "    location / { try_files $uri =404; }\n"
             << "  }\n"
             << "}\n";
      }
      child_ = std::make_unique<Child>(
          std::vector<std::string>{*bin, "-p", dir_.string(), "-e", (dir_ / "error.log").string(), "-c",
                                   (dir_ / "nginx.conf").string(), "-g", "daemon off;"},
          dir_ / "stderr.log");
      if (wait_for_port(port_, *child_, std::chrono::seconds(10))) return "";
      child_.reset();  // most likely the port was taken meanwhile: try another
    }
    std::ifstream f(dir_ / "error.log");
    std::stringstream ss;
    ss << f.rdbuf();
    return "nginx did not start: " + ss.str();
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  struct LoggedRequest {
    std::string connection, method, uri, status;
  };
  // The access log's requests whose URI starts with `uri_prefix`, once there are at least
  // `expected` of them (nginx logs a request when it finalises it, which can be just after the
  // client has read the last byte), or what is there when `timeout` passes.
  std::vector<LoggedRequest> logged(const std::string& uri_prefix, std::size_t expected,
                                    std::chrono::milliseconds timeout = std::chrono::seconds(10)) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      std::vector<LoggedRequest> out;
      std::ifstream f(dir_ / "access.log");
      for (std::string line; std::getline(f, line);) {
        std::istringstream words(line);
        LoggedRequest r;
        if (words >> r.connection >> r.method >> r.uri >> r.status && r.uri.rfind(uri_prefix, 0) == 0)
          out.push_back(std::move(r));
      }
      if (out.size() >= expected || std::chrono::steady_clock::now() >= deadline) return out;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

 private:
  fs::path root_, dir_;
  int port_ = 0;
  std::unique_ptr<Child> child_;
};

inline std::string source_dir() { return CUBESTREAM_SOURCE_DIR; }

// The tests' fault-injecting proxy (fault_proxy.py) in front of `upstream_port`.
class FaultProxy {
 public:
  std::string start(int upstream_port) {
    dir_ = scratch_dir("proxy");
    child_ = std::make_unique<Child>(
        std::vector<std::string>{"/usr/bin/python3", source_dir() + "/tests/cpp/store/fault_proxy.py",
                                 std::to_string(upstream_port)},
        dir_ / "stderr.log");
    auto line = child_->read_line(std::chrono::seconds(20));
    if (!line || line->rfind("PORT ", 0) != 0) return "fault proxy did not start: " + child_->log_text();
    port_ = std::stoi(line->substr(5));
    return "";
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string log() const { return child_ ? child_->log_text() : ""; }

 private:
  fs::path dir_;
  int port_ = 0;
  std::unique_ptr<Child> child_;
};

// moto's S3 server with signature checks on (s3_server.py), and the key it created.
class Moto {
 public:
  // "" when started; a message starting with "skip:" when moto is not installed.
  std::string start() {
    auto py = find_program("python3");
    if (!py) return "skip: no python3 on PATH";
    if (std::system((*py + " -c 'import moto.server, boto3' >/dev/null 2>&1").c_str()) != 0)
      return "skip: the python3 on PATH (" + *py + ") has no moto/boto3";
    dir_ = scratch_dir("moto");
    child_ = std::make_unique<Child>(
        std::vector<std::string>{*py, source_dir() + "/tests/cpp/store/s3_server.py"}, dir_ / "stderr.log");
    auto line = child_->read_line(std::chrono::seconds(60));
    if (!line) return "moto did not start: " + child_->log_text();
    auto j = nlohmann::json::parse(*line);
    port_ = j["port"].get<int>();
    access_key_ = j["access_key"].get<std::string>();
    secret_key_ = j["secret_key"].get<std::string>();
    return "";
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  s3::Config config() const {
    s3::Config c;
    c.endpoint = endpoint();
    c.region = "us-east-1";
    c.credentials = {access_key_, secret_key_, ""};
    return c;
  }
  const std::string& secret_key() const { return secret_key_; }
  const std::string& access_key() const { return access_key_; }

 private:
  fs::path dir_;
  int port_ = 0;
  std::string access_key_, secret_key_;
  std::unique_ptr<Child> child_;
};

}  // namespace cubestream::test
