#include "local/gpu_devices.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using Ids = std::vector<std::string>;

TEST(GpuDevices, VisibleDevicesAreReadAsCudaReadsThem) {
  struct Case {
    const char* value;
    Ids want;
  };
  const Case cases[] = {
      {"0,1,2,3", {"0", "1", "2", "3"}},
      {" 2 , 0 ", {"2", "0"}},
      {"", {}},
      {"   ", {}},
      {"-1", {}},                // the usual way to hide every GPU
      {"0,1,-1,2", {"0", "1"}},  // CUDA stops at the first entry it cannot read
      {"1,x,2", {"1"}},
      {"0,0,1", {"0", "1"}},  // a device once
      {"GPU-8f6a2c1e-aaaa,MIG-5d3e,3", {"GPU-8f6a2c1e-aaaa", "MIG-5d3e", "3"}},
      {"0,,1", {"0"}},
  };
  for (const auto& c : cases) EXPECT_EQ(ParseVisibleDevices(c.value), c.want) << '"' << c.value << '"';
}

TEST(GpuDevices, NvidiaSmiListGivesUuidsAndMigDevicesInPlaceOfTheirGpu) {
  const std::string text =
      "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa-0000)\n"
      "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-bbbb-1111)\n"
      "  MIG 1g.5gb      Device  0: (UUID: MIG-cccc-2222)\n"
      "  MIG 1g.5gb      Device  1: (UUID: MIG-dddd-3333)\n"
      "GPU 2: Tesla T4 (UUID: GPU-eeee-4444)\n"
      "No devices were found\n";
  EXPECT_THAT(ParseNvidiaSmiList(text),
              ElementsAre("GPU-aaaa-0000", "MIG-cccc-2222", "MIG-dddd-3333", "GPU-eeee-4444"));
  EXPECT_THAT(ParseNvidiaSmiList("No devices were found\n"), IsEmpty());
  EXPECT_THAT(ParseNvidiaSmiList(""), IsEmpty());
}

TEST(GpuDevices, TheGpusFlag) {
  EXPECT_EQ(*ParseGpuFlag("0,2"), (Ids{"0", "2"}));
  EXPECT_EQ(*ParseGpuFlag("none"), Ids{});
  EXPECT_EQ(*ParseGpuFlag(""), Ids{});
  EXPECT_EQ(ParseGpuFlag("0,,1").status().code(), StatusCode::kInvalidArgument);
}

TEST(GpuDevices, AContainersGpusComeFromItsLimitsOrRequests) {
  struct Case {
    json container;
    int64_t want;
  };
  const Case cases[] = {
      {json::object(), 0},
      {{{"resources", {{"limits", {{"cpu", "2"}}}}}}, 0},
      {{{"resources", {{"limits", {{"nvidia.com/gpu", "2"}}}}}}, 2},
      {{{"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}, 1},
      {{{"resources", {{"requests", {{"nvidia.com/gpu", "3"}}}}}}, 3},
      {{{"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}, {"requests", {{"nvidia.com/gpu", "1"}}}}}}, 1},
  };
  for (const auto& c : cases) EXPECT_EQ(*ContainerGpus(c.container, "c"), c.want) << c.container.dump();
  for (json bad : {json("0.5"), json("lots"), json("-1"), json(true)}) {
    auto got = ContainerGpus({{"resources", {{"limits", {{"nvidia.com/gpu", bad}}}}}}, "spec.containers[0]");
    ASSERT_FALSE(got.ok()) << bad.dump();
    EXPECT_THAT(got.status().message(),
                HasSubstr("spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value"));
  }
}

TEST(GpuDevices, EveryResourceFieldButGpusIsNamedAsNotApplied) {
  json c = {{"resources",
             {{"limits", {{"cpu", "2"}, {"memory", "1Gi"}, {"nvidia.com/gpu", "1"}}},
              {"requests", {{"cpu", "1"}, {"example.com/fpga", "1"}}},
              {"claims", {{{"name", "gpu"}}}}}}};
  EXPECT_THAT(UnappliedResourceFields(c),
              ElementsAre("limits.cpu", "limits.memory", "requests.cpu", "requests.example.com/fpga", "claims"));
  EXPECT_THAT(UnappliedResourceFields({{"resources", {{"limits", {{"nvidia.com/gpu", "1"}}}}}}), IsEmpty());
}

GpuNeed Need(const std::string& replica, std::vector<int64_t> containers, std::vector<int64_t> init = {},
             api::ReplicaType type = api::ReplicaType::kWorker) {
  return {replica, type, std::move(init), std::move(containers)};
}

TEST(GpuDevices, EachReplicaGetsDevicesOfItsOwn) {
  GpuDevices found{{"0", "1", "2", "3"}, "CUDA_VISIBLE_DEVICES=0,1,2,3"};
  auto got = AssignGpus(
      found, {Need("j-worker-0", {1}), Need("j-worker-1", {1}), Need("j-worker-2", {1}), Need("j-worker-3", {1})});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT((*got)["j-worker-0"].devices, ElementsAre("0"));
  EXPECT_THAT((*got)["j-worker-1"].devices, ElementsAre("1"));
  EXPECT_THAT((*got)["j-worker-2"].devices, ElementsAre("2"));
  EXPECT_THAT((*got)["j-worker-3"].containers[0], ElementsAre("3"));
}

TEST(GpuDevices, ContainersGetSlicesAndReplicasWithoutGpusGetNone) {
  GpuDevices found{{"GPU-a", "GPU-b", "GPU-c", "GPU-d"}, "nvidia-smi -L"};
  // The PS asks for nothing; the chief has a sidecar without GPUs; the worker's init container
  // uses the first of the worker's devices.
  auto got = AssignGpus(found, {Need("j-ps-0", {0}, {}, api::ReplicaType::kPS),
                                Need("j-chief-0", {1, 0}, {}, api::ReplicaType::kChief), Need("j-worker-0", {2}, {1})});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_THAT((*got)["j-ps-0"].devices, IsEmpty());
  EXPECT_THAT((*got)["j-chief-0"].containers, ElementsAre(Ids{"GPU-a"}, Ids{}));
  EXPECT_THAT((*got)["j-worker-0"].devices, ElementsAre("GPU-b", "GPU-c"));
  EXPECT_THAT((*got)["j-worker-0"].init_containers, ElementsAre(Ids{"GPU-b"}));
  EXPECT_THAT((*got)["j-worker-0"].containers, ElementsAre(Ids{"GPU-b", "GPU-c"}));
}

TEST(GpuDevices, APodNeedsItsContainersSumOrItsLargestInitContainer) {
  EXPECT_EQ(Need("r", {1, 2}).Total(), 3);
  EXPECT_EQ(Need("r", {1}, {3, 2}).Total(), 3);
  EXPECT_EQ(Need("r", {}).Total(), 0);
}

TEST(GpuDevices, AJobNeedingMoreThanThereAreIsRefusedNamingTheNeedAndTheDevices) {
  GpuDevices found{{"0", "1"}, "CUDA_VISIBLE_DEVICES=0,1"};
  auto got = AssignGpus(
      found, {Need("j-chief-0", {1}, {}, api::ReplicaType::kChief), Need("j-worker-0", {1}), Need("j-worker-1", {1})});
  ASSERT_EQ(got.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(
      got.status().message(),
      "this job needs 3 GPUs (nvidia.com/gpu: 1 for 1 Chief, 2 for 2 Worker) but this machine offers 2 (0,1), "
      "from CUDA_VISIBLE_DEVICES=0,1; give the devices with --gpus LIST or CUDA_VISIBLE_DEVICES, or ask for fewer");
  auto none = AssignGpus({{}, "no nvidia-smi on PATH"}, {Need("j-worker-0", {1})});
  EXPECT_THAT(none.status().message(), HasSubstr("but this machine offers none, from no nvidia-smi on PATH"));
  EXPECT_TRUE(AssignGpus({{}, "no nvidia-smi on PATH"}, {Need("j-worker-0", {0})}).ok());
}

TEST(GpuDevices, TheEnvironmentOfAContainer) {
  EXPECT_THAT(GpuEnvironment({"2", "3"}),
              ElementsAre(std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", "2,3"},
                          std::pair<std::string, std::string>{"NVIDIA_VISIBLE_DEVICES", "2,3"}));
  EXPECT_THAT(GpuEnvironment({}), ElementsAre(std::pair<std::string, std::string>{"CUDA_VISIBLE_DEVICES", ""},
                                              std::pair<std::string, std::string>{"NVIDIA_VISIBLE_DEVICES", "void"}));
}

}  // namespace
}  // namespace tfjob::local
