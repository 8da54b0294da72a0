/*
 * tsan_canary.c - a deliberate data race, for t-tsan-threads.sh to prove
 * that its ThreadSanitizer machinery works where it runs: the wrapper
 * preloads libtsan, TSan reads the options, writes its reports where the
 * test looks, and the test's scan finds a race and names the line. Built
 * with -fsanitize=thread; not an MPI program (mpirun starts it like one).
 *
 * Two threads increment the same counter without a lock (the line marked
 * RACE), then meet at a barrier so that both run at once.
 * Output: "tsan_canary: counter N" (N is whatever the race left).
 */
#include <pthread.h>
#include <stdio.h>

static long counter;
static pthread_barrier_t start;

static void *bump(void *arg)
{
    int i;

    (void) arg;
    pthread_barrier_wait(&start);
    for (i = 0; i < 1000; ++i) {
        counter++; /* RACE: unguarded read-modify-write from two threads */
    }
    return NULL;
}

int main(void)
{
    pthread_t t[2];
    int i;

    pthread_barrier_init(&start, NULL, 2);
    for (i = 0; i < 2; ++i) {
        if (0 != pthread_create(&t[i], NULL, bump, NULL)) {
            perror("tsan_canary: pthread_create");
            return 1;
        }
    }
    for (i = 0; i < 2; ++i) {
        pthread_join(t[i], NULL);
    }
    printf("tsan_canary: counter %ld\n", counter);
    return 0;
}
