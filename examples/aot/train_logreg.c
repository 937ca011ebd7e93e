/* train_logreg: examples/logreg.tg compiled ahead of time, trained from C through its typed API (logreg.h).
 *
 *   build/tgc compile examples/logreg.tg --emit=lib -o out/logreg
 *   cmake -S examples/aot -B out/build -DMODEL=$PWD/out/logreg && cmake --build out/build
 *   out/build/train_logreg examples/data/logreg_X.npy examples/data/logreg_y.npy
 */
#include "logreg.h"

#include <stdio.h>

static int failed(void) {
  fprintf(stderr, "train_logreg: %s\n", tgc_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: train_logreg X.npy y.npy\n");
    return 2;
  }
  tgc_array X, y;
  if (tgc_array_load_npy(argv[1], &X) != TGC_OK || tgc_array_load_npy(argv[2], &y) != TGC_OK) return failed();
  tgc_model *model;
  if (logreg_open(&model, NULL) != TGC_OK) return failed(); /* the params start as the script says */

  /* Each input as a pointer and a shape: n, symbolic in the script, is bound by the shapes of each call. */
  logreg_inputs in = {(const float *)X.data, {X.shape[0], X.shape[1]}, (const float *)y.data, {y.shape[0]}};
  logreg_outputs out;
  for (int step = 0; step < 50; ++step)
    if (logreg_step(model, &in, &out) != TGC_OK) return failed();
  float w[4], b;
  if (logreg_get_w(model, w) != TGC_OK || logreg_get_b(model, &b) != TGC_OK) return failed();
  printf("loss %.9g\nw %.9g %.9g %.9g %.9g\nb %.9g\n", *out.loss, w[0], w[1], w[2], w[3], b);

  /* Errors are codes, with the message tgc would give, located in the script. */
  logreg_inputs wrong = in;
  wrong.X_shape[1] = 3;
  tgc_status status = logreg_run(model, &wrong, &out);
  printf("wrong shape: %d %s\n", (int)status, tgc_last_error());

  /* Params can be set, and read back. */
  float zeros[4] = {0, 0, 0, 0};
  if (logreg_set_w(model, zeros) != TGC_OK || logreg_get_w(model, w) != TGC_OK) return failed();
  printf("set: %g %g %g %g\n", w[0], w[1], w[2], w[3]);

  tgc_model *other;
  status = logreg_open(&other, "cuda");
  printf("device cuda: %d %s\n", (int)status, tgc_last_error());
  tgc_model_close(model);
  tgc_array_free(&X);
  tgc_array_free(&y);
  return 0;
}
