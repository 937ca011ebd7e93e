/* The C API of a library made ahead of time by `tgc compile SCRIPT --emit=lib -o DIR/NAME` (docs/aot.md).
 *
 * The library defines `NAME_library`, the compiled script: its optimized graphs, its host kernels compiled
 * for the CPU that --host-cpu named, and, when it was compiled with --device=cuda or auto, its device
 * kernels as PTX. A model is that script opened on a device, with its params (initialized as the script
 * says, then changed by each step's updates). NAME.h declares typed functions over these for each script;
 * this part is the same for every library. No compiler runs at run time: the library links tgc's runtime
 * (BLAS, oneDNN, the C++ runtime), never LLVM or ANTLR.
 *
 *   tgc_model *model;
 *   if (tgc_model_open(&mlp_library, NULL, &model) != TGC_OK) { puts(tgc_last_error()); return 1; }
 *   tgc_array inputs[2] = {...}, outputs[2];
 *   tgc_model_step(model, inputs, outputs);
 *   tgc_model_close(model);
 *
 * Every call returns TGC_OK or what went wrong; tgc_last_error() then says what, as tgc would
 * ("mlp.tg:7:7: input 'X': dimension 1 is 3, but the script declares 2"). A model runs on the thread that
 * calls it, one call at a time; different models may run on different threads. */
#ifndef TGC_AOT_H
#define TGC_AOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum tgc_status {
  TGC_OK = 0,
  TGC_ERROR_INPUT = 1,   /* inputs or a param's new value: a missing one, a wrong dtype or shape */
  TGC_ERROR_RUN = 2,     /* found while running: an index out of range, memory exhausted */
  TGC_ERROR_DEVICE = 3,  /* the device asked for cannot be opened, or the library has no code for it */
  TGC_ERROR_USAGE = 4,   /* a call out of place: a null pointer, an unknown device name, a bad file */
  TGC_ERROR_INTERNAL = 5 /* a bug in tgc: please report it */
} tgc_status;

/* Element types, as the script spells them: f32 f64 i32 i64 bool (one byte, 0 or 1). */
typedef enum tgc_dtype { TGC_F32 = 0, TGC_F64 = 1, TGC_I32 = 2, TGC_I64 = 3, TGC_BOOL = 4 } tgc_dtype;

/* An array in host memory, C order (row-major, contiguous): `rank` sizes at `shape`, elements at `data`.
 * An array the library gives points at memory the model holds: outputs until its next run or step. */
typedef struct tgc_array {
  tgc_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  void *data;
} tgc_array;

/* An input, param or output as the script declares it: each dimension's size, or -1 where it is symbolic
 * (`n` in f32[n, 4]: bound by the inputs of each call), with the symbol's name in `symbols`. */
typedef struct tgc_port {
  const char *name;
  tgc_dtype dtype;
  int32_t rank;
  const int64_t *shape;
  const char *const *symbols; /* one per dimension: the symbol, or NULL for a static size */
} tgc_port;

typedef enum tgc_port_kind { TGC_INPUTS = 0, TGC_PARAMS = 1, TGC_OUTPUTS = 2 } tgc_port_kind;

/* What a generated library defines as NAME_library (written by tgc; read only by tgc_model_open). */
typedef struct tgc_library {
  const unsigned char *image; /* the program, the kernels' names, the PTX */
  uint64_t image_size;
  void *const *kernels; /* the host kernels, in the image's order */
  uint64_t kernel_count;
} tgc_library;

typedef struct tgc_model tgc_model;

/* The message of the last call on this thread that did not return TGC_OK ("" when none failed). */
const char *tgc_last_error(void);

/* Opens `library` on `device`: "cpu"; "cuda" (an error when no GPU answers, or the library was compiled
 * without device code); "auto" (cuda when the library has device code and a GPU answers, else the CPU); or
 * NULL for the device the library was compiled for (`tgc compile --device`, cpu by default), with auto's
 * fallback. Initializes the params. */
tgc_status tgc_model_open(const tgc_library *library, const char *device, tgc_model **model);
/* Frees the model and everything it gave; NULL is ignored. */
void tgc_model_close(tgc_model *model);
/* "cpu" or the GPU's name ("cuda: NVIDIA H100 80GB HBM3, sm_90"). */
const char *tgc_model_device(const tgc_model *model);

/* The inputs, params or outputs, in the order the script declares them; the count is returned. */
size_t tgc_model_ports(const tgc_model *model, tgc_port_kind kind, const tgc_port **ports);

/* Runs the script on `inputs` (one per input, in order; an input only the updates read may have NULL
 * data when running) and points `outputs` (one per output) at the results. */
tgc_status tgc_model_run(tgc_model *model, const tgc_array *inputs, tgc_array *outputs);
/* As tgc_model_run, then applies the updates (all at once): one training step. */
tgc_status tgc_model_step(tgc_model *model, const tgc_array *inputs, tgc_array *outputs);

/* Points `value` at a copy of param `index`'s current value, which the model holds until the next
 * tgc_model_param of that param, or its close. */
tgc_status tgc_model_param(tgc_model *model, size_t index, tgc_array *value);
/* Gives param `index` a copy of `value`, which must have the param's dtype and shape. */
tgc_status tgc_model_set_param(tgc_model *model, size_t index, const tgc_array *value);

/* Reads a NumPy .npy file into a new array (free it with tgc_array_free). */
tgc_status tgc_array_load_npy(const char *path, tgc_array *array);
/* Writes `array` as a NumPy .npy file. */
tgc_status tgc_array_save_npy(const char *path, const tgc_array *array);
/* Frees an array tgc_array_load_npy made; NULL data is ignored. */
void tgc_array_free(tgc_array *array);
/* Writes `array` as `tgc run` prints it (NumPy's str) into `buffer` (NUL-terminated, cut to `size`) and
 * returns the length of the whole text, as snprintf does. */
size_t tgc_array_format(const tgc_array *array, char *buffer, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* TGC_AOT_H */
