// libFuzzer target: the kubeconfig reader (YAML or JSON text -> KubeConfig or a clear error).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kube/kube_config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  // base_dir "/nonexistent": file references are tried and fail cleanly, never read real files.
  auto cfg = tfjob::kube::ParseKubeconfig(text, "/nonexistent", "");
  (void)cfg;
  return 0;
}
