/* pause: the process of a pod's sandbox container in the test cluster (scripts/cluster.sh).
 * It holds the pod's namespaces open and does nothing else: it sleeps until SIGINT or SIGTERM
 * (exit 0), and as PID 1 of the pod's PID namespace (when shared) it reaps orphaned children.
 * Compiled statically by scripts/build-cluster-tools.sh and packed into a one-file image. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  int saved = errno;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(int argc, char** argv) {
  if (argc > 1 && (strcmp(argv[1], "-v") == 0 || strcmp(argv[1], "--version") == 0)) {
    puts("ppu-pause 1");
    return 0;
  }
  if (getpid() != 1) fputs("pause: warning: not running as PID 1\n", stderr);
  struct sigaction stop = {0}, child = {0};
  stop.sa_handler = on_stop;
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) || sigaction(SIGCHLD, &child, NULL)) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) pause();
}
