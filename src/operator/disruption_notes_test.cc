#include "operator/disruption_notes.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::operator_ {
namespace {

using api::PodPhase;
using testing::MakePod;

const std::string kKey = "default/test-tfjob";

api::Pod Deleted(api::Pod pod) {
  pod.meta.deletion_timestamp = api::Time(std::chrono::seconds(1767225600));
  return pod;
}

std::vector<std::string> Uids(const std::vector<core::PodDisruption>& notes) {
  std::vector<std::string> out;
  for (const auto& d : notes) out.push_back(d.uid);
  return out;
}

// D21 as a table: which deletions are noted.
TEST(DisruptionNotes, WhatIsNoted) {
  struct Case {
    const char* name;
    bool leading;
    PodPhase phase;
    bool ours;              // this operator deletes it (Deleting before the event)
    bool seen_terminating;  // its deletionTimestamp was seen (else only its delete event)
    bool noted;
  };
  const std::vector<Case> cases = {
      {"a running pod deleted by someone else", true, PodPhase::kRunning, false, true, true},
      {"deleted at once (no deletionTimestamp seen)", true, PodPhase::kRunning, false, false, true},
      {"our own delete", true, PodPhase::kRunning, true, true, false},
      {"our own delete, at once", true, PodPhase::kRunning, true, false, false},
      {"an ended pod", true, PodPhase::kSucceeded, false, true, false},
      {"a failed pod", true, PodPhase::kFailed, false, false, false},
      {"a standby notes nothing", false, PodPhase::kRunning, false, true, false},
  };
  for (const auto& c : cases) {
    DisruptionNotes notes{Logger()};
    if (c.leading) notes.Lead();
    api::Pod pod = MakePod("test-tfjob", "worker", 0, c.phase);
    if (c.ours) notes.Deleting(kKey, pod.meta.uid);
    if (c.seen_terminating) notes.DeletionStarted(kKey, Deleted(pod));
    notes.PodGone(kKey, c.seen_terminating ? Deleted(pod) : pod);
    EXPECT_EQ(notes.Has(kKey), c.noted) << c.name;
    EXPECT_EQ(Uids(notes.For(kKey)), c.noted ? std::vector<std::string>{pod.meta.uid} : std::vector<std::string>{})
        << c.name;
  }
}

// A note stays until a pass has read and counted it, once per pod; our delete of a noted pod
// drops its note (the pass that deletes it counted it); Forget drops the job's notes.
TEST(DisruptionNotes, ConsumedDeletedAndForgotten) {
  DisruptionNotes notes{Logger()};
  notes.Lead();
  api::Pod a = MakePod("test-tfjob", "worker", 0, PodPhase::kRunning);
  api::Pod b = MakePod("test-tfjob", "worker", 1, PodPhase::kRunning);
  notes.DeletionStarted(kKey, Deleted(a));
  notes.DeletionStarted(kKey, Deleted(a));  // the same pod again: one note
  const auto read = notes.For(kKey);
  ASSERT_EQ(read.size(), 1u);
  notes.DeletionStarted(kKey, Deleted(b));  // after the pass read
  notes.Consume(kKey, read);
  EXPECT_EQ(Uids(notes.For(kKey)), std::vector<std::string>{b.meta.uid});
  notes.Deleting(kKey, b.meta.uid);
  EXPECT_TRUE(notes.For(kKey).empty());
  notes.DeletionStarted(kKey, Deleted(a));
  notes.Forget(kKey);
  EXPECT_FALSE(notes.Has(kKey));
}

}  // namespace
}  // namespace tfjob::operator_
