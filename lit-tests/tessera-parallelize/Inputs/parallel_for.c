/* tessera_parallel_for as compiled code calls it, for mlir-cpu-runner: ranges of a parallel
   loop's iterations on four threads (three started for the call, and the caller), joined
   before it returns. tessera's own runtime (src/mlir/cpu/runtime/parallel_for.rs) runs them
   on its thread pool instead. */
#include <pthread.h>
#include <stdint.h>

typedef void (*body_fn)(void *, int64_t, int64_t);

struct range {
  body_fn body;
  void *context;
  int64_t first, last;
};

static void *run_range(void *argument) {
  struct range *range = argument;
  range->body(range->context, range->first, range->last);
  return 0;
}

void tessera_parallel_for(body_fn body, void *context, int64_t iterations) {
  enum { THREADS = 4 };
  int64_t ranges = iterations < THREADS ? iterations : THREADS;
  struct range parts[THREADS];
  pthread_t threads[THREADS];
  if (ranges <= 0)
    return;
  for (int64_t i = 0; i < ranges; ++i) {
    parts[i] = (struct range){body, context, iterations * i / ranges,
                              iterations * (i + 1) / ranges};
    if (i > 0)
      pthread_create(&threads[i], 0, run_range, &parts[i]);
  }
  run_range(&parts[0]);
  for (int64_t i = 1; i < ranges; ++i)
    pthread_join(threads[i], 0);
}
