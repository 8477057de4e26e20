#pragma once
// The TFJob CustomResourceDefinition. Its one source is config/crd/kubeflow.org_tfjobs.yaml,
// compiled into the binary at build time, so `tfjob crd` prints exactly that file.

#include <string_view>

namespace tfjob::api {

std::string_view CrdYaml();

}  // namespace tfjob::api
