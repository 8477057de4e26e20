#include "cli/signals.h"

#include <pthread.h>
#include <unistd.h>
#include <csignal>
#include <thread>

#include "common/logging.h"

namespace tfjob::cli {

int WithSignalStops(const std::function<int(std::stop_token, std::stop_token)>& body, bool log_signals) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR2);  // our own "stop waiting" at exit
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop, kill_now;
  std::jthread waiter([&signals, &stop, &kill_now, log_signals](std::stop_token) {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0) {
      if (sig == SIGUSR2) return;
      if (log_signals)
        Logger().Info("signal received; shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      if (stop.stop_requested())
        kill_now.request_stop();
      else
        stop.request_stop();
    }
  });
  int rc = body(stop.get_token(), kill_now.get_token());
  pthread_kill(waiter.native_handle(), SIGUSR2);
  return rc;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

}  // namespace tfjob::cli
