#pragma once
// Clang's thread-safety analysis (-Wthread-safety, enabled for clang builds in
// cmake/TfjobHelpers.cmake); the macros are empty under other compilers. libstdc++'s std::mutex
// carries no capability attribute, so members the analysis should check are guarded by
// tfjob::Mutex (a std::mutex with the attributes) and locked with tfjob::MutexLock:
//   mutable Mutex mu_;
//   bool lost_ TFJOB_GUARDED_BY(mu_) = false;
// Mutex is BasicLockable, so std::condition_variable_any can wait on it directly.

#include <mutex>

#if defined(__clang__)
#define TFJOB_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define TFJOB_THREAD_ANNOTATION(x)
#endif

#define TFJOB_CAPABILITY(x) TFJOB_THREAD_ANNOTATION(capability(x))
#define TFJOB_SCOPED_CAPABILITY TFJOB_THREAD_ANNOTATION(scoped_lockable)
#define TFJOB_GUARDED_BY(x) TFJOB_THREAD_ANNOTATION(guarded_by(x))
#define TFJOB_PT_GUARDED_BY(x) TFJOB_THREAD_ANNOTATION(pt_guarded_by(x))
#define TFJOB_REQUIRES(...) TFJOB_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define TFJOB_EXCLUDES(...) TFJOB_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define TFJOB_ACQUIRE(...) TFJOB_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define TFJOB_RELEASE(...) TFJOB_THREAD_ANNOTATION(release_capability(__VA_ARGS__))

namespace tfjob {

class TFJOB_CAPABILITY("mutex") Mutex {
 public:
  void lock() TFJOB_ACQUIRE() { mu_.lock(); }
  void unlock() TFJOB_RELEASE() { mu_.unlock(); }

 private:
  std::mutex mu_;
};

class TFJOB_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex& mu) TFJOB_ACQUIRE(mu) : mu_(mu) { mu_.lock(); }
  ~MutexLock() TFJOB_RELEASE() { mu_.unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex& mu_;
};

}  // namespace tfjob
