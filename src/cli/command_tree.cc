#include "cli/command_tree.h"

#include <CLI/CLI.hpp>

namespace tfjob::cli {

struct CommandTree::Impl {
  std::string program;
  CLI::App app;
  std::vector<std::unique_ptr<Command>> commands;
  Command* selected = nullptr;

  explicit Impl(const std::string& p)
      : program(p),
        app("tfjob: a Kubernetes operator for distributed TensorFlow training (TFJob kubeflow.org/v1)", p) {}

  // The command whose subcommand is named `name`, if any (the first argument of a failed parse).
  Command* Named(const std::string& name) const {
    for (const auto& c : commands)
      if (c->app().get_name() == name) return c.get();
    return nullptr;
  }
  std::string HelpOf(const Command* c) const { return c->cluster() ? c->app().help(program) : c->app().help(); }
};

CommandTree::CommandTree(const std::string& program) : impl_(std::make_unique<Impl>(program)) {
  CLI::App& app = impl_->app;
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");
  for (auto define :
       {DefineValidate, DefineRender, DefineOperator, DefineRun, DefineSubmit, DefineGet, DefineDescribe, DefineLogs,
        DefineSuspend, DefineResume, DefineDelete, DefineDashboard, DefineCrd, DefineVersion}) {
    std::unique_ptr<Command> command = define(app);
    Command* c = command.get();
    c->app().callback([this, c] { impl_->selected = c; });
    impl_->commands.push_back(std::move(command));
  }
}

CommandTree::~CommandTree() = default;

ParseResult CommandTree::Parse(const std::vector<std::string>& args) {
  Impl& t = *impl_;
  t.selected = nullptr;
  ParseResult r;
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    t.app.parse(reversed);
  } catch (const CLI::CallForHelp&) {
    r.kind = ParseResult::Kind::kHelp;
    if (t.app.get_subcommands().empty()) {
      r.text = t.app.help();
    } else {
      r.command = t.Named(t.app.get_subcommands().front()->get_name());
      r.text = r.command != nullptr ? t.HelpOf(r.command) : t.app.get_subcommands().front()->help();
    }
    return r;
  } catch (const CLI::CallForAllHelp&) {
    r.kind = ParseResult::Kind::kHelp;
    r.text = t.app.help("", CLI::AppFormatMode::All);
    return r;
  } catch (const CLI::ParseError& e) {
    r.kind = ParseResult::Kind::kUsageError;
    r.command = args.empty() ? nullptr : t.Named(args[0]);
    r.text = e.what();
    return r;
  }
  r.command = t.selected;
  if (r.command == nullptr) {  // require_subcommand(1) makes this unreachable
    r.kind = ParseResult::Kind::kUsageError;
    r.text = "A subcommand is required";
    return r;
  }
  if (Status s = r.command->Check(); !s.ok()) {
    r.kind = ParseResult::Kind::kUsageError;
    r.text = s.message();
  }
  return r;
}

void CommandTree::PrintUsageError(const ParseResult& result, std::ostream& err) const {
  if (result.command != nullptr && result.command->cluster()) {
    std::string command = impl_->program + " " + result.command->app().get_name();
    err << command << ": " << result.text << "\nRun '" << command << " --help' for usage.\n";
    return;
  }
  err << "tfjob: " << result.text << "\nRun 'tfjob --help' for usage.\n";
}

}  // namespace tfjob::cli
