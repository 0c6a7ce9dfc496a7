// Small blocking TCP helpers with deadlines, for the store and the tcp backend's set-up.
// Every failure throws rg::Error starting with `what` (the caller's context).
#pragma once
#include <string>

#include "dist/options.h"

namespace rg::dist::net {

// A listening IPv4 socket on host:port ("" or "0.0.0.0": every interface; port 0: any).
int listen_tcp(const std::string& host, int port, int backlog, const std::string& what);
int local_port(int fd);
// The local IPv4 address of a connected socket (the interface that reaches its peer).
std::string local_address(int fd);
// "ip:port" of the other end of a connected socket.
std::string peer_address(int fd);
// Connects to host:port, retrying refused connections until `deadline`.
int connect_tcp(const std::string& host, int port, Clock::time_point deadline,
                const std::string& what);
// Accepts one connection; -1 if none came before `deadline`.
int accept_tcp(int listen_fd, Clock::time_point deadline);
void write_all(int fd, const void* data, size_t n, Clock::time_point deadline,
               const std::string& what);
void read_all(int fd, void* data, size_t n, Clock::time_point deadline, const std::string& what);
void set_nodelay(int fd);
// Identifies this machine (host name and boot id) and the launcher's node (GROUP_RANK, where
// set): equal strings mean ranks share memory.
std::string host_identity();

}  // namespace rg::dist::net
