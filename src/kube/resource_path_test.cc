#include "kube/resource_path.h"

#include <gtest/gtest.h>

namespace tfjob::kube {
namespace {

const GroupVersionResource kTfJobs{"kubeflow.org", "v1", "tfjobs"};  // a custom resource

TEST(ResourcePath, ApiGroupDiscovery) {
  EXPECT_EQ(ApiGroupPath("scheduling.k8s.io"), "/apis/scheduling.k8s.io");
  const GroupVersionResource a{"scheduling.k8s.io", "v1beta1", "podgroups"};
  EXPECT_EQ(a, (GroupVersionResource{"scheduling.k8s.io", "v1beta1", "podgroups"}));
  EXPECT_NE(a, (GroupVersionResource{"scheduling.k8s.io", "v1alpha2", "podgroups"}));
}

TEST(ResourcePath, CoreGroupAndNamedGroups) {
  EXPECT_EQ(ResourcePath(kPods, "ns", "p"), "/api/v1/namespaces/ns/pods/p");
  EXPECT_EQ(ResourcePath(kPods, ""), "/api/v1/pods");
  EXPECT_EQ(ResourcePath(kTfJobs, "ns", "j", "status"), "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status");
  EXPECT_EQ(ResourcePath(kCrds, "", "tfjobs.kubeflow.org"),
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/tfjobs.kubeflow.org");
}

TEST(ListQuery, EncodesEveryOption) {
  EXPECT_EQ(ListQuery({}), "");
  ListOptions o{.label_selector = "a=b,c in (d)",
                .resource_version = "42",
                .continue_token = "x/y=",
                .limit = 5,
                .watch = true,
                .allow_watch_bookmarks = true,
                .timeout = std::chrono::seconds(300)};
  EXPECT_EQ(ListQuery(o),
            "?labelSelector=a%3Db%2Cc%20in%20%28d%29&resourceVersion=42&continue=x%2Fy%3D&limit=5&watch=true"
            "&allowWatchBookmarks=true&timeoutSeconds=300");
}

}  // namespace
}  // namespace tfjob::kube
