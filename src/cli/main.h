#pragma once
// `tfjob`'s entry point (docs/architecture.md section 5): one CLI11 tree (command_tree.h) holding
// every command, parsed once; the parsed command runs. Takes the output streams so that tests run
// it in-process. Exit codes: api/exit_codes.h.

#include <ostream>

namespace tfjob::cli {

// argv[0]'s file name "kubectl-tfjob" (the kubectl plugin link) makes the help say "kubectl tfjob".
int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace tfjob::cli
