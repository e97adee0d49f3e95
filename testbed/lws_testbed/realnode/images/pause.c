/* The pause container of the local cluster's real nodes: holds the pod's namespaces, reaps
 * zombies (it is PID 1 when the pod shares its PID namespace), exits 0 on SIGINT/SIGTERM.
 * Built with gcc -static; nothing else is in its image. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "lws-testbed-pause-1"

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(int argc, char **argv) {
    if (argc == 2 && argv[1][0] == '-' && argv[1][1] == 'v') {
        printf("%s\n", VERSION);
        return 0;
    }
    if (getpid() != 1) {
        fprintf(stderr, "warning: pause should be the first process\n");
    }
    struct sigaction term = {.sa_handler = stop};
    struct sigaction child = {.sa_handler = reap, .sa_flags = SA_NOCLDSTOP};
    if (sigaction(SIGINT, &term, NULL) < 0 || sigaction(SIGTERM, &term, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0) {
        perror("sigaction");
        return 1;
    }
    for (;;) {
        pause();
    }
}
