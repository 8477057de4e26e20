/* The pod sandbox's process (the "pause" container) of the test bed's real node, built by
 * scripts/build-images with `gcc -static`. It holds the pod's namespaces open: it sleeps until
 * SIGTERM or SIGINT (then exits 0) and, as PID 1 of a shared PID namespace, reaps every child
 * that is re-parented to it. docs/test-cluster.md describes the images. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop_requested = 0;

static void on_stop(int sig) {
  (void)sig;
  stop_requested = 1;
}

static void on_child(int sig) {
  (void)sig; /* reaped in the main loop */
}

static int install(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(int argc, char** argv) {
  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("tfjob-pause 3.10-tfjob\n");
    return 0;
  }
  if (install(SIGTERM, on_stop) != 0 || install(SIGINT, on_stop) != 0 ||
      install(SIGCHLD, on_child) != 0) {
    perror("pause: sigaction");
    return 1;
  }
  /* The three signals stay blocked except inside sigsuspend, so none is lost between the check
   * of stop_requested and the wait. */
  sigset_t blocked, waiting;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGTERM);
  sigaddset(&blocked, SIGINT);
  sigaddset(&blocked, SIGCHLD);
  sigprocmask(SIG_BLOCK, &blocked, &waiting);
  sigdelset(&waiting, SIGTERM);
  sigdelset(&waiting, SIGINT);
  sigdelset(&waiting, SIGCHLD);
  if (getpid() != 1) fprintf(stderr, "pause: not running as PID 1\n");
  for (;;) {
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
    if (stop_requested) return 0;
    sigsuspend(&waiting); /* returns after a handled signal */
  }
}
