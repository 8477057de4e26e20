#pragma once
// PortReservations: `tfjob run`'s replica ports (docs/local.md). Each replica's port is
// reserved up front as a socket bound to 127.0.0.1 and not listening: nobody else can bind it,
// and connections to it are refused as if nothing were there. A reservation is handed to the
// replica's supervisor, which closes it just before the containers start, and taken again when
// the replica has exited, until its restart. Single-threaded (the runner's loop).

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace tfjob::local {

class PortReservations {
 public:
  PortReservations() = default;
  PortReservations(const PortReservations&) = delete;
  PortReservations& operator=(const PortReservations&) = delete;
  ~PortReservations();  // closes what is still reserved

  // One port per name, each unique, from below the kernel's ephemeral range at a random start
  // (nothing that asks the kernel for any free port can take one between the release of its
  // reservation and the replica's own bind); a range too small for `names` falls back to ports
  // the kernel picks. kInvalidArgument naming the replica when no port can be had.
  Status ReserveAll(const std::vector<std::string>& names);
  // The port of `name` (0 when it has none).
  int port(const std::string& name) const;
  // The reserved socket of `name`, -1 when it is not held.
  int fd(const std::string& name) const;
  // The runner's copy is closed (the supervisor holds its own); still counted as held until
  // Released.
  void CloseOwnCopy(const std::string& name);
  // The replica has started: no longer held by the runner.
  void Released(const std::string& name);
  // Held again until the replica's restart (after it exited). A port left in TIME_WAIT by a
  // replica that accepted connections is taken with SO_REUSEADDR, which still keeps it from
  // other binders that don't set it and from outgoing connections. Nothing when already held.
  void ReserveAgain(const std::string& name);

 private:
  std::map<std::string, int> port_of_;   // by replica name
  std::map<std::string, int> reserved_;  // replica name -> bound socket (-1: handed over)
};

}  // namespace tfjob::local
