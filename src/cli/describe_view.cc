// The text of `tfjob describe` (docs/cli.md): why a job is not running, the replicas' timeline
// and the whole page. Pure, declared in job_view.h.
#include <algorithm>
#include <set>

#include "cli/job_view.h"

namespace tfjob::cli {

namespace {

// What the checks of WhyNotRunning look at: the input, the sentence's subject, the pods not
// being deleted (by name) and the number of replicas the spec asks for.
struct WhyContext {
  const WhyInput& in;
  std::string subject;
  std::vector<const PodView*> pods;
  int wanted = 0;
};

// One cause of WhyNotRunning: its answer ("" when the job is fine), or nullopt for the next check.
using WhyCheck = std::optional<std::string> (*)(const WhyContext&);

std::optional<std::string> WhyFinished(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (const ConditionView* f = Condition(job.conditions, "Failed"); f != nullptr && f->status == "True") {
    if (f->reason == "TFJobFailedValidation") return w.subject + " failed validation: " + Esc(f->message);
    return "";
  }
  if (IsTrue(job.conditions, "Succeeded")) return "";
  return std::nullopt;
}

std::string WhyKueueSuspended(const WhyContext& w) {
  const WhyInput& in = w.in;
  std::string s = w.subject + " is suspended by Kueue (queue \"" + Esc(in.job.queue) + "\")";
  if (!in.workload) return s + ": it has no Workload yet (is Kueue running and the LocalQueue there?)";
  s += ": Workload " + Esc(in.workload->name);
  const ConditionView* qr = Condition(in.workload->conditions, "QuotaReserved");
  const ConditionView* ad = Condition(in.workload->conditions, "Admitted");
  const ConditionView* ev = Condition(in.workload->conditions, "Evicted");
  if (ev != nullptr && ev->status == "True") return s + " was evicted: " + Esc(ev->reason) + ": " + Esc(ev->message);
  if (ad != nullptr && ad->status == "True") return s + " is admitted; the job is about to resume";
  if (qr != nullptr && qr->status != "True")
    return s + " is not admitted: " + (qr->message.empty() ? Esc(qr->reason) : Esc(qr->message));
  if (qr != nullptr) return s + " has quota reserved and waits for admission checks";
  return s + " is not admitted yet";
}

std::optional<std::string> WhySuspended(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (!job.suspend && !IsTrue(job.conditions, "Suspended")) return std::nullopt;
  if (!job.queue.empty()) return WhyKueueSuspended(w);
  return w.subject + " is suspended (spec.runPolicy.suspend is true): `tfjob resume " + Esc(job.name) + "` starts it";
}

// kube-scheduler's own groups (D27) have no phase: a PodGroupScheduled=False condition of the
// group, or of one of D33's members, says why the gang waits.
std::optional<std::string> WhyNativeGangNotScheduled(const WhyContext& w, const PodGroupView& pg) {
  std::vector<const PodGroupView*> groups = {&pg};
  for (const auto& m : pg.members) groups.push_back(&m);
  for (const PodGroupView* g : groups) {
    const ConditionView* c = Condition(g->conditions, "PodGroupScheduled");
    if (c == nullptr || c->status != "False") continue;
    std::string s = "its PodGroup " + Esc(g->name) + " (" + g->kind + ") is not scheduled";
    if (!c->reason.empty()) s += ": " + Esc(c->reason);
    if (!c->message.empty()) s += ": " + Esc(c->message);
    return w.subject + " is not running: " + s + "; kube-scheduler has not placed the whole gang";
  }
  return std::nullopt;
}

std::optional<std::string> WhyGangNotAdmitted(const WhyContext& w) {
  const auto& pg = w.in.pod_group;
  if (pg && pg->native) return WhyNativeGangNotScheduled(w, *pg);
  if (!pg || pg->phase == "Inqueue" || pg->phase == "Running" || pg->phase == "Completed") return std::nullopt;
  std::string s = "its PodGroup (" + pg->kind + ") is " +
                  (pg->phase.empty() ? std::string("without a phase") : Esc(pg->phase)) +
                  ", not yet Inqueue: the gang scheduler has not admitted the whole gang";
  for (const auto& c : pg->conditions)
    if (!c.message.empty()) {
      s += " (" + Esc(c.message) + ")";
      break;
    }
  return w.subject + " is not running: " + s;
}

std::optional<std::string> WhyImagePull(const WhyContext& w) {
  for (const PodView* p : w.pods)
    for (const auto* list : {&p->init_containers, &p->containers})
      for (const auto& c : *list)
        if (c.state == "waiting" && ImagePullReason(c.reason))
          return w.subject + " is not running: pod " + Esc(p->name) + " cannot pull the image of container " +
                 Esc(c.name) + ": " + Esc(c.reason) + (c.message.empty() ? "" : ": " + Esc(c.message));
  return std::nullopt;
}

std::optional<std::string> WhyUnschedulable(const WhyContext& w) {
  for (const PodView* p : w.pods) {
    const ConditionView* sched = Condition(p->conditions, "PodScheduled");
    if (sched != nullptr && sched->status == "False")
      return w.subject + " is not running: pod " + Esc(p->name) +
             " is unschedulable: " + (sched->message.empty() ? Esc(sched->reason) : Esc(sched->message));
  }
  return std::nullopt;
}

bool ContainerFailingReason(const std::string& r) {
  return r == "CrashLoopBackOff" || r == "CreateContainerConfigError" || r == "CreateContainerError" ||
         r == "RunContainerError";
}

std::optional<std::string> WhyContainerFailing(const WhyContext& w) {
  for (const PodView* p : w.pods)
    for (const auto& c : p->containers)
      if (c.state == "waiting" && ContainerFailingReason(c.reason))
        return w.subject + " is not running: pod " + Esc(p->name) + " container " + Esc(c.name) + " is in " +
               Esc(c.reason) + " (restarts " + std::to_string(c.restarts) + ")" +
               (c.message.empty() ? "" : ": " + Esc(c.message));
  return std::nullopt;
}

std::optional<std::string> WhyNoOperator(const WhyContext& w) {
  if (!w.in.job.conditions.empty()) return std::nullopt;
  return w.subject + " has no conditions: no TFJob operator has seen it yet (is `tfjob operator` running?)";
}

std::optional<std::string> WhyAllRunning(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (!IsTrue(job.conditions, "Running") || IsTrue(job.conditions, "Restarting")) return std::nullopt;
  bool all_running = static_cast<int>(w.pods.size()) >= w.wanted;
  for (const PodView* p : w.pods) all_running = all_running && p->phase == "Running";
  if (all_running) return "";
  return std::nullopt;
}

std::optional<std::string> WhyPodsMissing(const WhyContext& w) {
  if (static_cast<int>(w.pods.size()) >= w.wanted) return std::nullopt;
  return w.subject + " is not running: " + std::to_string(w.pods.size()) + " of its " + std::to_string(w.wanted) +
         " pods exist (the operator creates them; see the events below)";
}

std::optional<std::string> WhyPodsPending(const WhyContext& w) {
  std::vector<std::string> pending;
  for (const PodView* p : w.pods)
    if (p->phase == "Pending" || p->phase.empty()) pending.push_back(Esc(p->name));
  if (pending.empty()) return std::nullopt;
  std::string s = w.subject + " is not running: " + std::to_string(pending.size()) + " pod(s) Pending (" + pending[0];
  if (pending.size() > 1) s += ", ...";
  return s + ")";
}

std::optional<std::string> WhyRestarting(const WhyContext& w) {
  if (!IsTrue(w.in.job.conditions, "Restarting")) return std::nullopt;
  return w.subject + " is restarting failed replicas";
}

// The causes in the order they are checked: the first with an answer gives it.
constexpr WhyCheck kWhyChecks[] = {WhyFinished,      WhySuspended,        WhyGangNotAdmitted, WhyImagePull,
                                   WhyUnschedulable, WhyContainerFailing, WhyNoOperator,      WhyAllRunning,
                                   WhyPodsMissing,   WhyPodsPending,      WhyRestarting};

}  // namespace

std::string WhyNotRunning(const WhyInput& in) {
  WhyContext w{in, "TFJob " + Esc(in.job.name), {}, 0};
  for (const auto& p : in.pods)
    if (!p.deleting) w.pods.push_back(&p);
  std::sort(w.pods.begin(), w.pods.end(), [](const PodView* a, const PodView* b) { return a->name < b->name; });
  for (const auto& [t, n] : in.job.replicas) w.wanted += n;
  for (WhyCheck check : kWhyChecks)
    if (auto why = check(w)) return *why;
  return "";
}

namespace {

// Maps times from t0 to now onto the columns of a timeline `width` wide.
struct TimelineScale {
  api::Time t0;
  std::chrono::system_clock::duration span;
  int width;
  size_t Col(api::Time t) const {
    auto c = static_cast<long long>((t - t0) * static_cast<long long>(width - 1) / span);
    return static_cast<size_t>(std::clamp<long long>(c, 0, width - 1));
  }
};

// When the main container's (first) run started, if it did.
std::optional<api::Time> RunStart(const ContainerView& c) {
  std::optional<api::Time> run_start = c.started ? c.started : c.last_started;
  if (c.last_started && (!run_start || *c.last_started < *run_start)) run_start = c.last_started;
  return run_start;
}

std::string TimelineBar(const PodView& p, const TimelineScale& sc, api::Time now) {
  std::string bar(static_cast<size_t>(sc.width), ' ');
  const ContainerView& c = p.main;
  api::Time created = p.created.value_or(sc.t0);
  std::optional<api::Time> run_start = RunStart(c);
  std::optional<api::Time> end = c.finished;
  size_t a = sc.Col(created), b = run_start ? sc.Col(*run_start) : sc.Col(end.value_or(now));
  for (size_t i = a; i < b && i < bar.size(); ++i) bar[i] = '.';
  if (run_start) {
    size_t e = end ? sc.Col(*end) : sc.Col(now);
    for (size_t i = b; i <= e && i < bar.size(); ++i) bar[i] = '=';
  }
  if (c.last_finished) bar[sc.Col(*c.last_finished)] = 'x';
  if (end)
    bar[sc.Col(*end)] = c.exit_code == 0 ? '|' : 'x';
  else if (run_start)
    bar[sc.Col(now)] = '>';
  return bar;
}

std::string TimelineText(const PodView& p, api::Time t0) {
  const ContainerView& c = p.main;
  api::Time created = p.created.value_or(t0);
  std::optional<api::Time> run_start = RunStart(c);
  std::optional<api::Time> end = c.finished;
  std::string text = "created +" + Seconds(created - t0);
  if (run_start) text += ", running +" + Seconds(*run_start - t0);
  if (c.last_finished) text += ", exit " + std::to_string(c.last_exit_code) + " at +" + Seconds(*c.last_finished - t0);
  if (end) text += ", exit " + std::to_string(c.exit_code) + " at +" + Seconds(*end - t0);
  if (c.restarts > 0) text += ", " + std::to_string(c.restarts) + (c.restarts == 1 ? " restart" : " restarts");
  if (!run_start && !end) text += ", " + PodState(p);
  return text;
}

}  // namespace

std::vector<std::string> FormatReplicaTimeline(const JobView& job, const std::vector<PodView>& pods, api::Time now,
                                               int width) {
  std::vector<std::string> out;
  if (pods.empty() || width < 4) return out;
  api::Time t0 = job.created.value_or(now);
  for (const auto& p : pods)
    if (p.created && *p.created < t0) t0 = *p.created;
  TimelineScale scale{t0, std::max<std::chrono::system_clock::duration>(now - t0, std::chrono::seconds(1)), width};
  size_t name_width = 0;
  for (const auto& p : pods) name_width = std::max(name_width, Esc(p.name).size());
  std::vector<const PodView*> sorted;
  for (const auto& p : pods) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const PodView* a, const PodView* b) { return a->name < b->name; });
  for (const PodView* p : sorted)
    out.push_back("  " + Pad(Esc(p->name), name_width) + "  " + TimelineBar(*p, scale, now) + "  " +
                  TimelineText(*p, t0));
  return out;
}

namespace {

std::string Ago(const std::optional<api::Time>& t, api::Time now) {
  return t ? api::FormatTime(*t) + " (" + FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - *t)) +
                 " ago)"
           : std::string("-");
}

std::string DescribeSummary(const DescribeInput& in) {
  const JobView& job = in.why.job;
  std::string out;
  out += "Name:        " + Esc(job.name) + "\n";
  out += "Namespace:   " + Esc(job.ns) + "\n";
  out += "State:       " + JobState(job) + "\n";
  if (!job.queue.empty()) out += "Queue:       " + Esc(job.queue) + "\n";
  out += "Created:     " + Ago(job.created, in.now) + "\n";
  if (job.started) out += "Started:     " + Ago(job.started, in.now) + "\n";
  if (job.completed) out += "Completed:   " + Ago(job.completed, in.now) + "\n";
  out += "Replicas:    " + FormatReplicaCounts(job) + "\n";
  std::string why = WhyNotRunning(in.why);
  if (!why.empty()) out += "Why not running: " + why + "\n";
  return out;
}

std::string DescribeConditions(const JobView& job) {
  std::string out = "\nConditions (oldest first):\n";
  std::vector<ConditionView> conds = job.conditions;
  std::stable_sort(conds.begin(), conds.end(), [](const ConditionView& a, const ConditionView& b) {
    if (!a.last_transition || !b.last_transition) return false;
    return *a.last_transition < *b.last_transition;
  });
  if (conds.empty()) out += "  (none)\n";
  for (const auto& c : conds) {
    std::string when = c.last_transition && job.created ? "+" + Seconds(*c.last_transition - *job.created) : "?";
    out += "  " + Pad(when, 7) + " " + Pad(Esc(c.type) + "=" + Esc(c.status), 18) + " " + Pad(Esc(c.reason), 24) + " " +
           Esc(c.message) + "\n";
  }
  return out;
}

// One line per condition of a Workload or a native PodGroup, each indented by `indent`.
std::string ConditionLines(const std::vector<ConditionView>& conditions, const std::string& indent) {
  std::string out;
  for (const auto& c : conditions)
    out += indent + Pad(Esc(c.type) + "=" + Esc(c.status), 20) + " " + Pad(Esc(c.reason), 20) + " " + Esc(c.message) +
           "\n";
  return out;
}

// kube-scheduler's own group (D27): its conditions, and those of D33's members.
std::string DescribeNativePodGroup(const PodGroupView& pg) {
  std::string out = "\nPodGroup " + Esc(pg.name) + " (" + pg.kind + "):\n";
  out += pg.conditions.empty() ? "  (no conditions)\n" : ConditionLines(pg.conditions, "  ");
  for (const auto& m : pg.members) {
    out += "  member " + Esc(m.name) + ":\n";
    out += m.conditions.empty() ? "    (no conditions)\n" : ConditionLines(m.conditions, "    ");
  }
  return out;
}

// The Kueue Workload and the gang scheduler's PodGroup, those there are.
std::string DescribeAdmission(const WhyInput& why) {
  std::string out;
  if (why.workload)
    out += "\nKueue Workload " + Esc(why.workload->name) + ":\n" + ConditionLines(why.workload->conditions, "  ");
  if (why.pod_group && why.pod_group->native) {
    out += DescribeNativePodGroup(*why.pod_group);
  } else if (why.pod_group) {
    out += "\nPodGroup (" + why.pod_group->kind + "): phase " +
           (why.pod_group->phase.empty() ? "-" : Esc(why.pod_group->phase)) + "\n";
  }
  return out;
}

std::string DescribeReplicas(const DescribeInput& in) {
  const JobView& job = in.why.job;
  std::string out = "\nReplicas:\n";
  std::vector<local::ReplicaRow> rr = ReplicaRows(job, in.why.pods, in.now);
  for (auto& r : rr)
    if (r.detail.empty() && r.state != "NotCreated") r.detail = "-";
  for (const auto& r : local::FormatReplicaTable(rr, "NODE")) out += "  " + r + "\n";
  std::vector<std::string> timeline = FormatReplicaTimeline(job, in.why.pods, in.now);
  if (!timeline.empty()) {
    out +=
        "\nTimeline (job created ... now; '.' pending, '=' running, 'x' failed, '|' succeeded, '>' still running):\n";
    for (const auto& l : timeline) out += l + "\n";
  }
  return out;
}

std::string DescribeEvents(std::vector<EventView> events, api::Time now) {
  std::string out = "\nEvents (most recent last):\n";
  std::stable_sort(events.begin(), events.end(), [](const EventView& a, const EventView& b) {
    if (!a.last || !b.last) return false;
    return *a.last < *b.last;
  });
  constexpr size_t kMaxEvents = 30;
  if (events.size() > kMaxEvents) {
    out += "  (" + std::to_string(events.size() - kMaxEvents) + " older events not shown)\n";
    events.erase(events.begin(), events.end() - kMaxEvents);
  }
  if (events.empty()) out += "  (none)\n";
  for (const auto& e : events) {
    std::string when = e.last ? FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - *e.last)) : "?";
    out += "  " + Pad(when, 6) + " " + Pad(Esc(e.type), 8) + " " + Pad(Esc(e.reason), 22) + " " +
           Pad(Esc(e.object), 28) + " " + Esc(e.message) + (e.count > 1 ? " (x" + std::to_string(e.count) + ")" : "") +
           "\n";
  }
  return out;
}

}  // namespace

std::string FormatDescribe(const DescribeInput& in) {
  return DescribeSummary(in) + DescribeConditions(in.why.job) + DescribeAdmission(in.why) + DescribeReplicas(in) +
         DescribeEvents(in.events, in.now);
}

}  // namespace tfjob::cli
