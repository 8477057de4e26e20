#include "cli/command_tree.h"

#include "api/field_error.h"

#include <algorithm>

#include <CLI/CLI.hpp>

namespace tfjob::cli {
namespace {

// A suggestion is made within this many edits (kubectl's SuggestionsMinimumDistance).
constexpr size_t kMaxSuggestionDistance = 2;

// Edits (insert, delete, replace, swap two neighbours) from a to b: the optimal string alignment
// distance, so "rnu" is one swap from "run". Bounded by the callers: command-line words.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string UnknownCommandMessage(std::string_view typed, const std::vector<std::string>& commands) {
  std::string message = "unknown command " + api::QuoteValue(std::string(typed));
  // Words longer than any command are not worth comparing (and stay cheap on hostile input).
  const std::string* nearest = nullptr;
  size_t best = kMaxSuggestionDistance + 1;
  for (const auto& c : commands) {
    if (typed.size() > c.size() + kMaxSuggestionDistance) continue;
    size_t d = EditDistance(typed, c);
    if (d < best) {
      best = d;
      nearest = &c;
    }
  }
  if (nearest == nullptr && typed.size() >= 2)  // kubectl also suggests a command the word begins
    for (const auto& c : commands)
      if (c.starts_with(typed)) {
        nearest = &c;
        break;
      }
  if (nearest != nullptr) message += "; did you mean " + api::QuoteValue(*nearest) + "?";
  return message;
}

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
  // Handled by PreParse (the `version` command); declared so that --help lists it.
  const std::string version_help = "Print the version (as `tfjob version`)";
  app.add_flag("--version", version_help);
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
  if (PreParse(args, &r)) return r;
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

// What CLI11 would get wrong: `--version` (the root has no command to run), and a first word
// that is no command (CLI11 says "A subcommand is required", or prints the root's help for
// `tfjob dashbord --help` with exit 0).
bool CommandTree::PreParse(const std::vector<std::string>& args, ParseResult* r) const {
  if (!args.empty() && args[0] == "--version") {
    r->command = impl_->Named("version");
    r->kind = args.size() == 1 ? ParseResult::Kind::kRun : ParseResult::Kind::kUsageError;
    if (args.size() > 1) r->text = "--version takes no arguments (found " + api::QuoteValue(args[1]) + ")";
    return true;
  }
  for (const auto& a : args) {
    if (a.starts_with("-")) continue;  // the root's own flags (--help, --help-all)
    if (impl_->Named(a) != nullptr) return false;
    std::vector<std::string> names;
    for (const auto& c : impl_->commands) names.push_back(c->app().get_name());
    r->kind = ParseResult::Kind::kUsageError;
    r->text = UnknownCommandMessage(a, names);
    return true;
  }
  return false;
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
