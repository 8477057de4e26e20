#pragma once
// The start-up check of the installed TFJob CRD (docs/semantics.md D29): does its status schema
// keep our extensions replicaStatuses.<type>.restarts (D2) and .disruptions (D21)? With
// upstream's CRD left in place it does not: the API server prunes them from every status write,
// and the restart count would start again from 0 after each operator restart. Pure: the CRD is
// given as JSON.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfjob::operator_ {

struct CrdStatusSchema {
  // Our status fields the schema would prune ("restarts", "disruptions"); empty when it keeps
  // them (typed, or under x-kubernetes-preserve-unknown-fields).
  std::vector<std::string> pruned;
  bool ok() const { return pruned.empty(); }
};

// REQUIRES: `crd` is a CustomResourceDefinition of apiextensions.k8s.io/v1 (anything else, or a
// CRD without a v1 schema, reports both fields as pruned).
CrdStatusSchema CheckCrdStatusSchema(const nlohmann::json& crd);

}  // namespace tfjob::operator_
