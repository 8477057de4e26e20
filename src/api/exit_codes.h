#pragma once
// The exit codes of `tfjob` (README.md, docs/cli.md, docs/operator.md): one meaning each, for
// every command.

namespace tfjob::api {

inline constexpr int kExitOk = 0;
// The job or spec failed (validate, render, run, submit --wait), or the server refused; the
// operator lost its lease or did not stop in time (docs/operator.md).
inline constexpr int kExitFailed = 1;
// Usage, configuration, environment or connection (the operator's start-up checks).
inline constexpr int kExitUsage = 2;
// --timeout ran out (submit --wait, delete --wait), as timeout(1).
inline constexpr int kExitTimeout = 124;
// Stopped by Ctrl-C or SIGTERM (128 + SIGINT).
inline constexpr int kExitInterrupted = 130;

}  // namespace tfjob::api
