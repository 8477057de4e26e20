#pragma once
// A Pod in its protobuf form (k8s.io/api/core/v1 Pod) as the JSON that DecodePod reads: only
// those fields, so a big job's pod (its TF_CONFIG names every replica) is read without its spec.
// The operator lists and watches its pods in protobuf (docs/operator.md, "API requests");
// the field numbers are those of the Kubernetes API's generated.proto.

#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tfjob::api {

// metadata (name, namespace, uid, resourceVersion, labels, ownerReferences' uid and controller,
// deletionTimestamp), spec.nodeName, and status (phase, reason, message, conditions, container
// and init container statuses: name, restartCount, state.waiting and state.terminated). A field
// of the wrong wire type reads as absent, as in the JSON decoders; a malformed message is
// kDataLoss. Linear in the bytes; the depth is fixed by these fields, not by the input.
StatusOr<nlohmann::json> PodProtoToJson(std::string_view pod);

}  // namespace tfjob::api
