#include "api/structural_schema.h"

#include <functional>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/crd.h"
#include "api/manifest.h"

namespace tfjob::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A YAML value (ParseManifest reads a text that starts with '{' as JSON: wrap it).
json Yaml(const std::string& text) {
  std::string indented = "v:\n";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    indented += "  " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  auto docs = ParseManifest(indented);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return docs.ok() && !docs->empty() ? (*docs)[0].object["v"] : json();
}

std::vector<std::string> Strings(const FieldErrors& errors) {
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.ToString());
  return out;
}

// ---- The classes of error, each on a small schema written for it. ----

constexpr const char* kSchema = R"(
type: object
required: [name]
properties:
  name: {type: string, minLength: 1, maxLength: 5}
  kind: {type: string, enum: [A, B]}
  count: {type: integer, minimum: 0, maximum: 10}
  ratio: {type: number}
  on: {type: boolean}
  size:
    anyOf: [{type: integer}, {type: string}]
    x-kubernetes-int-or-string: true
    pattern: '^[0-9]+(Mi|Gi)?$'
  when: {type: string, format: date-time}
  maybe: {type: string, nullable: true}
  tags: {type: array, maxItems: 2, minItems: 1, items: {type: string}, x-kubernetes-list-type: set}
  ports:
    type: array
    x-kubernetes-list-type: map
    x-kubernetes-list-map-keys: [port, protocol]
    items:
      type: object
      required: [port, protocol]  # protocol: defaulted before it is required
      properties:
        port: {type: integer}
        protocol: {type: string, default: TCP}
  labels: {type: object, additionalProperties: {type: string}}
  free: {type: object, x-kubernetes-preserve-unknown-fields: true}
)";

struct Row {
  const char* what;
  const char* yaml;  // the object
  std::vector<std::string> errors;
  std::vector<std::string> unknown;
};

TEST(StructuralSchema, EveryClassOfErrorWithItsPath) {
  auto schema = StructuralSchema::Parse(Yaml(kSchema));
  ASSERT_TRUE(schema.ok()) << schema.status().ToString();
  const Row rows[] = {
      {"valid", "{name: a, kind: A, count: 3, ratio: 1, size: 5Gi, when: '2024-01-02T03:04:05Z', tags: [x]}", {}, {}},
      {"type", "{name: 5}", {"name: Invalid value: 5: must be of type string"}, {}},
      {"type of an object", "{name: a, labels: [a]}", {"labels: Invalid value: [\"a\"]: must be of type object"}, {}},
      {"integer, not number", "{name: a, count: 1.5}", {"count: Invalid value: 1.5: must be of type integer"}, {}},
      {"integral number is an integer", "{name: a, count: 2.0}", {}, {}},
      {"beyond 2^53 it is a number",
       "{name: a, count: 1.0e+20}",
       {"count: Invalid value: 1e+20: must be of type integer"},
       {}},
      {"enum", "{name: a, kind: C}", {"kind: Unsupported value: \"C\": supported values: \"A\", \"B\""}, {}},
      {"pattern", "{name: a, size: lots}", {"size: Invalid value: \"lots\": should match '^[0-9]+(Mi|Gi)?$'"}, {}},
      {"int-or-string takes an integer", "{name: a, size: 7}", {}, {}},
      {"int-or-string", "{name: a, size: 1.5}", {"size: Invalid value: 1.5: must be of type integer or string"}, {}},
      {"format",
       "{name: a, when: yesterday}",
       {"when: Invalid value: \"yesterday\": must be of type date-time (RFC 3339, 2006-01-02T15:04:05Z)"},
       {}},
      {"required", "{kind: A}", {"name: Required value"}, {}},
      {"required and null (pruned)", "{name: null}", {"name: Required value"}, {}},
      {"null is pruned", "{name: a, count: null}", {}, {}},
      {"nullable", "{name: a, maybe: null}", {}, {}},
      {"null item", "{name: a, tags: [null]}", {"tags[0]: Invalid value: null: must be of type string"}, {}},
      {"maxLength", "{name: abcdef}", {"name: Invalid value: \"abcdef\": may not be longer than 5"}, {}},
      {"minLength", "{name: ''}", {"name: Invalid value: \"\": should be at least 1 chars long"}, {}},
      {"minimum", "{name: a, count: -1}", {"count: Invalid value: -1: should be greater than or equal to 0"}, {}},
      {"maximum", "{name: a, count: 11}", {"count: Invalid value: 11: should be less than or equal to 10"}, {}},
      {"maxItems", "{name: a, tags: [a, b, c]}", {"tags: Invalid value: 3 items: must have at most 2 items"}, {}},
      {"minItems", "{name: a, tags: []}", {"tags: Invalid value: 0 items: must have at least 1 items"}, {}},
      {"list-type set", "{name: a, tags: [x, x]}", {"tags[1]: Duplicate value: \"x\""}, {}},
      {"list-map keys, with their defaults",
       "{name: a, ports: [{port: 1}, {port: 1, protocol: TCP}, {port: 1, protocol: UDP}]}",
       {"ports[1]: Duplicate value: {\"port\":1,\"protocol\":\"TCP\"}"},
       {}},
      {"list-map item required", "{name: a, ports: [{protocol: UDP}]}", {"ports[0].port: Required value"}, {}},
      {"map values", "{name: a, labels: {a: b, c: 1}}", {"labels[c]: Invalid value: 1: must be of type string"}, {}},
      {"unknown field", "{name: a, nmae: b}", {}, {"nmae: unknown field \"nmae\""}},
      {"unknown field deeper", "{name: a, ports: [{port: 1, prot: x}]}", {}, {"ports[0].prot: unknown field \"prot\""}},
      {"preserved fields", "{name: a, free: {any: {thing: 1}}}", {}, {}},
      {"the root's type", "[1]", {": Invalid value: [1]: must be of type object"}, {}},
  };
  for (const auto& row : rows) {
    SchemaFindings f = schema->Check(Yaml(row.yaml));
    EXPECT_EQ(Strings(f.errors), row.errors) << row.what;
    EXPECT_EQ(f.unknown, row.unknown) << row.what;
  }
}

TEST(StructuralSchema, RefusesSchemasItCannotApply) {
  EXPECT_THAT(StructuralSchema::Parse(Yaml("{type: object, properties: {a: {type: strnig}}}")).status().message(),
              HasSubstr("openAPIV3Schema.properties.a.type"));
  EXPECT_THAT(StructuralSchema::Parse(Yaml("{type: string, pattern: 'a{2}'}")).status().message(),
              HasSubstr("openAPIV3Schema.pattern: not understood"));
}

// ---- Rows generated from the CRD the binary carries: one per class of error it has. ----

struct Step {
  enum class Kind { kProperty, kMapValue, kItem };
  Kind kind;
  std::string name;
};
using Steps = std::vector<Step>;

std::string PathOf(const Steps& steps) {
  std::string out;
  for (const auto& s : steps) {
    if (s.kind == Step::Kind::kProperty) out += (out.empty() ? "" : ".") + s.name;
    if (s.kind == Step::Kind::kMapValue) out += "[x]";
    if (s.kind == Step::Kind::kItem) out += "[0]";
  }
  return out;
}

const SchemaNode& ChildOf(const SchemaNode& n, const Step& s) {
  if (s.kind == Step::Kind::kProperty) return *n.properties.at(s.name);
  if (s.kind == Step::Kind::kMapValue) return *n.additional_properties;
  return *n.items;
}

// The first node below spec (depth first, properties in key order) that `want` accepts.
bool Find(const SchemaNode& n, const std::function<bool(const SchemaNode&)>& want, Steps& steps) {
  if (!steps.empty() && want(n)) return true;
  auto descend = [&](const Step& s) {
    steps.push_back(s);
    if (Find(ChildOf(n, s), want, steps)) return true;
    steps.pop_back();
    return false;
  };
  for (const auto& [name, child] : n.properties) {
    if (steps.empty() && name != "spec") continue;  // metadata and status are not checked
    if (descend({Step::Kind::kProperty, name})) return true;
  }
  if (n.additional_properties && descend({Step::Kind::kMapValue, "x"})) return true;
  return n.items && descend({Step::Kind::kItem, ""});
}

// The smallest valid value of a node: its required fields, each the smallest valid value.
json Minimal(const SchemaNode& n) {
  if (n.int_or_string) return 1;
  switch (n.type) {
    case SchemaNode::Type::kString: return "a";
    case SchemaNode::Type::kInteger:
    case SchemaNode::Type::kNumber: return 1;
    case SchemaNode::Type::kBoolean: return false;
    case SchemaNode::Type::kArray: return json::array();
    default: break;
  }
  json o = json::object();
  for (const auto& r : n.required) o[r] = Minimal(*n.properties.at(r));
  return o;
}

// A minimal TFJob holding `leaf` at `steps` (every level on the way minimal and valid).
json Build(const SchemaNode& n, const Steps& steps, size_t i, const json& leaf) {
  if (i == steps.size()) return leaf;
  const SchemaNode& child = ChildOf(n, steps[i]);
  json inner = Build(child, steps, i + 1, leaf);
  if (steps[i].kind == Step::Kind::kItem) return json::array({inner});
  json o = Minimal(n);
  o[steps[i].name] = inner;
  return o;
}

struct Generated {
  Steps steps;
  json job;
};

std::optional<Generated> Generate(const std::function<bool(const SchemaNode&)>& want, const json& leaf) {
  const SchemaNode& root = TfJobSchema().root();
  Steps steps;
  if (!Find(root, want, steps)) return std::nullopt;
  return Generated{steps, Build(root, steps, 0, leaf)};
}

TEST(TfJobSchema, TheCrdItCarriesIsReadWhole) {
  auto docs = ParseManifest(CrdYaml());
  ASSERT_TRUE(docs.ok());
  const json& schema = (*docs)[0].object["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
  EXPECT_TRUE(StructuralSchema::Parse(schema).ok());  // every pattern understood
  EXPECT_TRUE(TfJobSchema().root().properties.contains("spec"));
}

TEST(TfJobSchema, GeneratedRowsOneForEachClassOfErrorTheCrdHas) {
  using T = SchemaNode::Type;
  struct Class {
    const char* what;
    std::function<bool(const SchemaNode&)> want;
    json leaf;
    std::string detail;  // of the one error expected at the generated path
  };
  const Class classes[] = {
      {"integer", [](const SchemaNode& n) { return n.type == T::kInteger; }, "x", "must be of type integer"},
      {"array", [](const SchemaNode& n) { return n.type == T::kArray; }, "python3 train.py", "must be of type array"},
      {"string", [](const SchemaNode& n) { return n.type == T::kString && !n.pattern; }, json::object({{"a", 1}}),
       "must be of type string"},
      {"boolean", [](const SchemaNode& n) { return n.type == T::kBoolean; }, "yes", "must be of type boolean"},
      {"object", [](const SchemaNode& n) { return n.type == T::kObject; }, 5, "must be of type object"},
      {"int-or-string", [](const SchemaNode& n) { return n.int_or_string; }, true, "must be of type integer or string"},
      {"pattern", [](const SchemaNode& n) { return n.pattern.has_value(); }, "lots", "should match '"},
  };
  for (const auto& c : classes) {
    auto g = Generate(c.want, c.leaf);
    ASSERT_TRUE(g.has_value()) << c.what;
    SchemaFindings f = CheckTfJobSchema(g->job);
    ASSERT_EQ(f.errors.size(), 1u) << c.what << ": " << g->job.dump();
    EXPECT_EQ(f.errors[0].field, PathOf(g->steps)) << c.what;
    EXPECT_THAT(f.errors[0].detail, HasSubstr(c.detail)) << c.what;
    EXPECT_THAT(f.unknown, IsEmpty()) << c.what;
  }
}

TEST(TfJobSchema, GeneratedRequiredUnknownAndListMapRows) {
  // required: the first object below spec with a required field, that field left out.
  auto g = Generate([](const SchemaNode& n) { return !n.required.empty(); }, json());
  ASSERT_TRUE(g.has_value());
  const SchemaNode& root = TfJobSchema().root();
  const SchemaNode* node = &root;
  for (const auto& s : g->steps) node = &ChildOf(*node, s);
  json parent = Minimal(*node);
  parent.erase(node->required[0]);
  SchemaFindings f = CheckTfJobSchema(Build(root, g->steps, 0, parent));
  EXPECT_THAT(Strings(f.errors), ElementsAre(PathOf(g->steps) + "." + node->required[0] + ": Required value"));

  // unknown: the first object below spec that lists its fields and keeps no others.
  g = Generate([](const SchemaNode& n) { return !n.properties.empty() && !n.preserve_unknown; }, json());
  ASSERT_TRUE(g.has_value());
  node = &root;
  for (const auto& s : g->steps) node = &ChildOf(*node, s);
  parent = Minimal(*node);
  parent["zzz"] = 1;
  f = CheckTfJobSchema(Build(root, g->steps, 0, parent));
  EXPECT_THAT(f.errors, IsEmpty());
  EXPECT_THAT(f.unknown, ElementsAre(PathOf(g->steps) + ".zzz: unknown field \"zzz\""));

  // list-type map: the first such list, two minimal items (the same keys).
  g = Generate([](const SchemaNode& n) { return n.list_type == "map" && n.items; }, json());
  ASSERT_TRUE(g.has_value());
  node = &root;
  for (const auto& s : g->steps) node = &ChildOf(*node, s);
  json item = Minimal(*node->items);
  f = CheckTfJobSchema(Build(root, g->steps, 0, json::array({item, item})));
  ASSERT_EQ(f.errors.size(), 1u) << f.errors[0].ToString();
  EXPECT_EQ(f.errors[0].field, PathOf(g->steps) + "[1]");
  EXPECT_EQ(f.errors[0].type, FieldErrorType::kDuplicate);
}

// The examples of issue 35, refused with their paths.
TEST(TfJobSchema, RefusesWhatTheApiServerRefuses) {
  json job = Yaml(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: a}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
          - name: tensorflow
            image: tf
            command: "python3 train.py"
            env: [{name: A, value: {from: map}}]
            resources: {limits: {cpu: lots, memory: 1Gi, nvidia.com/gpu: 1}}
)");
  const std::string c = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]";
  EXPECT_THAT(
      Strings(CheckTfJobSchema(job).errors),
      ElementsAre(
          c + ".command: Invalid value: \"python3 train.py\": must be of type array",
          c + ".env[0].value: Invalid value: {\"from\":\"map\"}: must be of type string",
          c + ".resources.limits[cpu]: Invalid value: \"lots\": should match "
              "'^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]"
              "*)?)|(\\.[0-9]+))))?$'"));
}

TEST(TfJobSchema, HostileInputIsBounded) {
  // A huge list of bad items: at most kMaxSchemaErrors errors are kept, the rest counted.
  json job = Yaml("spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: []}}}}}");
  json& containers = job["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"];
  for (int i = 0; i < 50000; ++i) containers.push_back(json::object({{"name", i}, {"image", "x"}}));
  SchemaFindings f = CheckTfJobSchema(job);
  EXPECT_EQ(f.errors.size(), kMaxSchemaErrors);
  EXPECT_EQ(f.errors_left_out, 50000 - kMaxSchemaErrors);  // every name is of the wrong type
  // A long bad value is cut short in its message.
  containers = json::array({json::object({{"name", "t"},
                                          {"image", std::string(1 << 20, 'x')},
                                          {"resources", {{"limits", {{"cpu", std::string(1 << 20, '9') + "x"}}}}}})});
  f = CheckTfJobSchema(job);
  ASSERT_EQ(f.errors.size(), 1u);
  EXPECT_LT(f.errors[0].ToString().size(), 600u);
  EXPECT_THAT(f.errors[0].value, HasSubstr("(1048577 bytes)"));
  // Deep nesting below what the schema describes is not walked (preserved, or an unknown field).
  std::string deep =
      "spec: {tfReplicaSpecs: {Worker: {template: {spec: {containers: [{name: t, image: x}], "
      "affinity: {nodeAffinity: {zzz: ";
  for (int i = 0; i < 200; ++i) deep += "[";
  for (int i = 0; i < 200; ++i) deep += "]";
  deep += "}}}}}}}";
  f = CheckTfJobSchema(Yaml(deep));
  EXPECT_THAT(f.errors, IsEmpty());
  EXPECT_EQ(f.unknown.size(), 1u);
}

}  // namespace
}  // namespace tfjob::api
