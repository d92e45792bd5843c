/* A stand-in CUDA driver for tests on machines without a GPU: it answers the workbench's probe
   (workbench/common/cuda_probe.py) as an H100 would (sm_90, 132 SMs) and implements nothing else.
   With LH_WORKBENCH_LIBCUDA pointing at it, `run --target cuda` does all its compile-side work (the
   GPU wrapper, cuda-lower, the check's reference) before the run worker fails to load the real
   runtime. Built by tests/test_cuda_rows.py with the system C compiler. */
int cuInit(unsigned flags) { (void)flags; return 0; }
int cuDeviceGetCount(int *count) { *count = 1; return 0; }
int cuDeviceGet(int *device, int ordinal) { (void)ordinal; *device = 0; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int device) {
  (void)device;
  *value = attribute == 75 ? 9 : attribute == 76 ? 0 : attribute == 16 ? 132 : 0;
  return 0;
}
int cuDeviceGetName(char *name, int len, int device) {
  const char *s = "Fake H100 (tests/fake_libcuda.c)";
  int i = 0;
  (void)device;
  for (; s[i] && i < len - 1; i++) name[i] = s[i];
  name[i] = 0;
  return 0;
}
int cuDriverGetVersion(int *version) { *version = 12080; return 0; }
int cuGetErrorName(int code, const char **name) { (void)code; *name = "CUDA_ERROR_FAKE"; return 0; }
