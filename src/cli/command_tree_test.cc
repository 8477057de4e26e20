#include "cli/command_tree.h"

#include <sstream>

#include <gtest/gtest.h>
#include <CLI/CLI.hpp>

#include "cli/cli_args.h"

namespace tfjob::cli {
namespace {

using Kind = ParseResult::Kind;

struct Parsed {
  ParseResult result;
  std::string name;   // the command's subcommand name ("" for the root)
  std::string usage;  // PrintUsageError's text, for a usage error
};

// Parses `args` with a fresh tree (its commands live as long as `tree`).
Parsed ParseWith(CommandTree& tree, const std::vector<std::string>& args) {
  Parsed p;
  p.result = tree.Parse(args);
  if (p.result.command != nullptr) p.name = p.result.command->app().get_name();
  if (p.result.kind == Kind::kUsageError) {
    std::ostringstream err;
    tree.PrintUsageError(p.result, err);
    p.usage = err.str();
  }
  return p;
}

// The value an option of the parsed command was given.
template <typename T>
T OptionValue(const ParseResult& r, const std::string& option) {
  return r.command->app().get_option(option)->as<T>();
}

TEST(CommandTree, EveryCommandIsOneSubcommandOfTheRootInHelpOrder) {
  CommandTree tree("tfjob");
  Parsed p = ParseWith(tree, {"--help"});
  ASSERT_EQ(p.result.kind, Kind::kHelp);
  size_t at = 0;
  for (const char* name : {"validate", "render", "operator", "run", "submit", "get", "describe", "logs", "suspend",
                           "resume", "delete", "crd", "version"}) {
    size_t found = p.result.text.find("\n  " + std::string(name) + " ", at);
    ASSERT_NE(found, std::string::npos) << name << " in\n" << p.result.text;
    at = found;
  }
}

TEST(CommandTree, ACallbackSelectsTheParsedCommand) {
  // A row per command: the arguments and the subcommand that runs.
  struct Case {
    std::vector<std::string> args;
    const char* command;
  };
  for (const Case& c : std::vector<Case>{
           {{"validate", "a.yaml", "b.yaml", "--strict"}, "validate"},
           {{"render", "a.yaml", "-o", "json"}, "render"},
           {{"operator", "--workers", "4"}, "operator"},
           {{"run", "a.yaml", "--quiet"}, "run"},
           {{"submit", "a.yaml", "--wait"}, "submit"},
           {{"get"}, "get"},
           {{"describe", "j"}, "describe"},
           {{"logs", "j", "-f"}, "logs"},
           {{"suspend", "j"}, "suspend"},
           {{"resume", "j"}, "resume"},
           {{"delete", "j", "--wait"}, "delete"},
           {{"crd"}, "crd"},
           {{"version"}, "version"},
       }) {
    CommandTree tree("tfjob");
    Parsed p = ParseWith(tree, c.args);
    EXPECT_EQ(p.result.kind, Kind::kRun) << c.command << ": " << p.result.text;
    EXPECT_EQ(p.name, c.command);
  }
}

TEST(CommandTree, OfflineCommandsBindTheirFlags) {
  CommandTree tree("tfjob");
  Parsed p = ParseWith(tree, {"render", "f.yaml", "--namespace", "team", "--gang-scheduler-name", "volcano",
                              "--tf-config-evaluator-in-cluster", "false", "--cluster-domain", "c.l"});
  ASSERT_EQ(p.result.kind, Kind::kRun) << p.result.text;
  EXPECT_EQ(OptionValue<std::string>(p.result, "FILE"), "f.yaml");
  EXPECT_EQ(OptionValue<std::string>(p.result, "--namespace"), "team");
  EXPECT_EQ(OptionValue<std::string>(p.result, "--gang-scheduler-name"), "volcano");
  EXPECT_FALSE(OptionValue<bool>(p.result, "--tf-config-evaluator-in-cluster"));
  EXPECT_EQ(OptionValue<std::string>(p.result, "--cluster-domain"), "c.l");
  EXPECT_EQ(OptionValue<std::string>(p.result, "--native-gang-api"), "v1alpha2") << "D31: render's default";
  for (const char* version : {"v1alpha2", "v1beta1"}) {
    CommandTree native("tfjob");
    p = ParseWith(native, {"render", "f.yaml", "--gang-scheduler-name", "kubernetes", "--native-gang-api", version});
    ASSERT_EQ(p.result.kind, Kind::kRun) << p.result.text;
    EXPECT_EQ(OptionValue<std::string>(p.result, "--native-gang-api"), version);
  }

  CommandTree run_tree("tfjob");
  p = ParseWith(run_tree, {"run", "f.yaml", "--grace-period", "1.5", "--logs-dir", "/tmp/l", "--clean-env"});
  ASSERT_EQ(p.result.kind, Kind::kRun) << p.result.text;
  EXPECT_DOUBLE_EQ(OptionValue<double>(p.result, "--grace-period"), 1.5);
  EXPECT_EQ(OptionValue<std::string>(p.result, "--logs-dir"), "/tmp/l");
  EXPECT_TRUE(OptionValue<bool>(p.result, "--clean-env"));

  CommandTree operator_tree("tfjob");
  p = ParseWith(operator_tree, {"operator", "--workers", "3", "--leader-elect", "false", "--log-format", "json",
                                "--webhook-server-port", "0", "--kueue-mode", "operator"});
  ASSERT_EQ(p.result.kind, Kind::kRun) << p.result.text;
  EXPECT_EQ(OptionValue<int>(p.result, "--workers"), 3);
  EXPECT_EQ(OptionValue<std::string>(p.result, "--kueue-mode"), "operator");
  EXPECT_EQ(OptionValue<std::string>(p.result, "--leader-elect"), "false");
  EXPECT_EQ(OptionValue<int>(p.result, "--webhook-port"), 0);
  // PodsReady is kept by default (Kueue's waitForPodsReady evicts a Workload without it).
  EXPECT_TRUE(OptionValue<bool>(p.result, "--kueue-wait-for-pods-ready"));
  CommandTree no_pods_ready("tfjob");
  p = ParseWith(no_pods_ready, {"operator", "--kueue-mode", "operator", "--kueue-wait-for-pods-ready", "false"});
  ASSERT_EQ(p.result.kind, Kind::kRun) << p.result.text;
  EXPECT_FALSE(OptionValue<bool>(p.result, "--kueue-wait-for-pods-ready"));
}

TEST(CommandTree, UsageErrorsNameTheFlagAndTheCommand) {
  // A row per error: the arguments, a part of the message, and whose usage line it gets.
  struct Case {
    std::vector<std::string> args;
    const char* message;
    const char* usage;
  };
  for (const Case& c : std::vector<Case>{
           {{}, "A subcommand is required", "Run 'tfjob --help' for usage."},
           {{"validate"}, "FILE is required", "Run 'tfjob --help' for usage."},
           {{"validate", "--bogus", "x"}, "--bogus", "Run 'tfjob --help' for usage."},
           {{"render", "f", "-o", "xml"}, "--output: xml not in {yaml,json}", "Run 'tfjob --help' for usage."},
           {{"render", "f", "--native-gang-api", "v1alpha3"},
            "--native-gang-api: v1alpha3 not in {v1alpha2,v1beta1}",
            "Run 'tfjob --help' for usage."},
           {{"run", "--grace-period", "-1", "f"}, "--grace-period: Value -1 not in range", "tfjob --help"},
           {{"operator", "--workers", "0"}, "--workers: Value 0 not in range 1 to 256", "tfjob --help"},
           {{"operator", "--log-level", "loud"}, "--log-level: loud not in", "tfjob --help"},
           {{"operator", "--kueue-mode", "both"}, "--kueue-mode: both not in {integration,operator}", "tfjob --help"},
           {{"version", "extra"}, "not expected: extra", "tfjob --help"},
           {{"get", "-o", "xml"}, "--output: xml not in {yaml,json,wide}", "Run 'tfjob get --help' for usage."},
           {{"get", "-A", "-n", "x"}, "-A/--all-namespaces and -n/--namespace", "tfjob get --help"},
           {{"get", "--kubeconfig"}, "--kubeconfig: 1 required TEXT missing", "tfjob get --help"},
           {{"get", "--help-all"}, "--help-all", "tfjob get --help"},
           {{"describe"}, "NAME is required", "tfjob describe --help"},
           {{"describe", "-A", "x"}, "-A", "tfjob describe --help"},
           {{"submit", "f", "--timeout", "5m"}, "--timeout needs --wait", "tfjob submit --help"},
           {{"submit", "f", "--delete-on-interrupt"}, "--delete-on-interrupt needs --wait", "tfjob submit --help"},
           {{"logs", "j", "--replica", "a", "--type", "b"}, "--replica excludes --type", "tfjob logs --help"},
           {{"logs", "j", "-f", "--max-log-requests", "0"}, "--max-log-requests: Value 0", "tfjob logs --help"},
           {{"logs", "j", "--since", "5x"}, "invalid duration \"5x\"", "tfjob logs --help"},
           {{"suspend"}, "NAME is required", "tfjob suspend --help"},
           {{"resume", "a", "b"}, "not expected: b", "tfjob resume --help"},
           {{"delete", "x", "--timeout", "5m"}, "--timeout needs --wait", "tfjob delete --help"},
       }) {
    CommandTree tree("tfjob");
    Parsed p = ParseWith(tree, c.args);
    std::string args;
    for (const auto& a : c.args) args += a + " ";
    ASSERT_EQ(p.result.kind, Kind::kUsageError) << args;
    EXPECT_NE(p.result.text.find(c.message), std::string::npos) << args << ": " << p.result.text;
    EXPECT_NE(p.usage.find(c.usage), std::string::npos) << args << ": " << p.usage;
  }
}

// Issue 35 item 5: a first word that is no command is named, with the nearest command (within
// two edits, a swap of neighbours being one; else one it begins), whatever follows it.
TEST(CommandTree, UnknownCommandsAreNamedWithTheNearest) {
  struct Case {
    std::vector<std::string> args;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {{"rnu", "job.yaml"}, "unknown command \"rnu\"; did you mean \"run\"?"},
           {{"vaildate", "f"}, "unknown command \"vaildate\"; did you mean \"validate\"?"},
           {{"rendr"}, "unknown command \"rendr\"; did you mean \"render\"?"},
           {{"gte"}, "unknown command \"gte\"; did you mean \"get\"?"},
           {{"desc", "j"}, "unknown command \"desc\"; did you mean \"describe\"?"},
           {{"versoin"}, "unknown command \"versoin\"; did you mean \"version\"?"},
           {{"frobnicate"}, "unknown command \"frobnicate\""},
           {{"dashbord", "--help"}, "unknown command \"dashbord\""},
           {{"--help", "rnu"}, "unknown command \"rnu\"; did you mean \"run\"?"},
           {{"x\x1b[2J"}, "unknown command \"x\\x1b[2J\""},
           {{std::string(100000, 'r')}, "unknown command \"rrrr"},
           {{"--version", "x"}, "--version takes no arguments (found \"x\")"},
       }) {
    CommandTree tree("tfjob");
    Parsed p = ParseWith(tree, c.args);
    ASSERT_EQ(p.result.kind, Kind::kUsageError) << c.args[0];
    EXPECT_EQ(p.result.text.substr(0, std::string(c.message).size()), c.message);
    EXPECT_EQ(p.usage, "tfjob: " + p.result.text + "\nRun 'tfjob --help' for usage.\n");
  }
  EXPECT_EQ(UnknownCommandMessage("frobnicate", {"run"}), "unknown command \"frobnicate\"");
  CommandTree tree("tfjob");
  Parsed p = ParseWith(tree, {"--version"});
  ASSERT_EQ(p.result.kind, Kind::kRun);
  EXPECT_EQ(p.name, "version");
}

TEST(CommandTree, UsageErrorLines) {
  CommandTree tree("kubectl tfjob");
  Parsed p = ParseWith(tree, {"get", "-o", "xml"});
  EXPECT_EQ(p.usage,
            "kubectl tfjob get: --output: xml not in {yaml,json,wide}\nRun 'kubectl tfjob get --help' for usage.\n");
  CommandTree offline("tfjob");
  p = ParseWith(offline, {"render"});
  EXPECT_EQ(p.usage, "tfjob: FILE is required\nRun 'tfjob --help' for usage.\n");
}

TEST(CommandTree, ANameThatIsAnotherCommandIsAName) {
  for (const char* name : {"validate", "run", "get", "logs"}) {
    auto a = ParseCliArgs({"describe", name});
    ASSERT_TRUE(a.ok()) << name << ": " << a.status().message();
    EXPECT_EQ(a->command, "describe");
    EXPECT_EQ(a->name, name);
  }
}

TEST(CommandTree, HelpOfEachCommand) {
  CommandTree tree("tfjob");
  Parsed p = ParseWith(tree, {"get", "--help"});
  ASSERT_EQ(p.result.kind, Kind::kHelp);
  EXPECT_EQ(p.name, "get");
  EXPECT_NE(p.result.text.find("Usage: tfjob get [OPTIONS] [NAME]"), std::string::npos) << p.result.text;
  EXPECT_NE(p.result.text.find("--request-timeout"), std::string::npos);
  EXPECT_EQ(p.result.text.find("--help-all"), std::string::npos) << "--help-all is the root's";
  CommandTree offline("tfjob");
  p = ParseWith(offline, {"validate", "--help"});
  ASSERT_EQ(p.result.kind, Kind::kHelp);
  EXPECT_NE(p.result.text.find("Usage: validate [OPTIONS] FILE..."), std::string::npos) << p.result.text;
  CommandTree all("tfjob");
  p = ParseWith(all, {"--help-all"});
  ASSERT_EQ(p.result.kind, Kind::kHelp);
  EXPECT_NE(p.result.text.find("--max-log-requests"), std::string::npos) << "every command's flags";
}

TEST(CliArgs, DescribeSuspendResumeDeleteTakeTheConnectionFlags) {
  for (const char* command : {"describe", "suspend", "resume", "delete", "logs"}) {
    auto a = ParseCliArgs(
        {command, "j", "--kubeconfig", "/k", "--context", "c", "--namespace", "ns", "--request-timeout", "2m"});
    ASSERT_TRUE(a.ok()) << command << ": " << a.status().message();
    EXPECT_EQ(a->command, command);
    EXPECT_EQ(a->name, "j");
    EXPECT_EQ(a->conn.kubeconfig, "/k");
    EXPECT_EQ(a->conn.context, "c");
    EXPECT_EQ(a->conn.ns, "ns");
    EXPECT_EQ(a->conn.request_timeout, std::chrono::milliseconds(120000));
  }
  auto a = ParseCliArgs({"get", "--request-timeout", "0"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->conn.request_timeout, std::chrono::milliseconds(30000)) << "0: the default";
}

}  // namespace
}  // namespace tfjob::cli
