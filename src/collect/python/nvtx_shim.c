/*
 * libteller_nvtx_shim.so: the smallest possible C surface over NVTX v3 for ctypes.
 *
 * Why a shim: Python has no NVTX binding in the standard library, and the `nvtx` PyPI
 * package or torch.cuda.nvtx may be absent (CPU-only runs, engines we must not change).
 * NVTX v3 is header-only: compiling it in here gives this library its own NVTX client
 * instance, which on its first call loads the tool named by NVTX_INJECTION64_PATH
 * (libteller_inject.so under `teller run`) exactly as any CUDA library's copy would.
 * With no tool attached every call is a null check, so loading the shim is harmless.
 *
 * ctypes passes `void*` for handles, `const char*` for UTF-8 text and `uint64_t` for
 * range ids, so the API below uses only those types. Every function returns what NVTX
 * returns (or nothing where NVTX returns nothing); the shim adds no state of its own.
 * A NULL domain means NVTX's default (global) domain.
 */
#include <nvtx3/nvToolsExt.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TELLER_SHIM_API __attribute__((visibility("default")))

/* Bumped when the exported API changes, so the Python side can refuse a stale library. */
#define TELLER_SHIM_ABI_VERSION 1

static void InitAttributes(nvtxEventAttributes_t* a) {
  memset(a, 0, sizeof(*a));
  a->version = NVTX_VERSION;
  a->size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
}

/* NVTX's message field is declared ASCII; UTF-8 passes through byte for byte, which is
 * what the recorder stores. Teller's own messages are pure ASCII (see python-hooks.md). */
static void SetAsciiMessage(nvtxEventAttributes_t* a, const char* message) {
  a->messageType = NVTX_MESSAGE_TYPE_ASCII;
  a->message.ascii = message != NULL ? message : "";
}

static void SetRegisteredMessage(nvtxEventAttributes_t* a, void* handle) {
  a->messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a->message.registered = (nvtxStringHandle_t)handle;
}

TELLER_SHIM_API int teller_shim_abi_version(void) { return TELLER_SHIM_ABI_VERSION; }

TELLER_SHIM_API void* teller_shim_domain_create(const char* name) {
  return (void*)nvtxDomainCreateA(name != NULL ? name : "");
}

TELLER_SHIM_API void teller_shim_domain_destroy(void* domain) {
  nvtxDomainDestroy((nvtxDomainHandle_t)domain);
}

TELLER_SHIM_API void* teller_shim_register_string(void* domain, const char* text) {
  return (void*)nvtxDomainRegisterStringA((nvtxDomainHandle_t)domain, text != NULL ? text : "");
}

/* Push/pop are per-thread stacks in NVTX: the caller must pop on the thread that pushed. */
TELLER_SHIM_API int teller_shim_push(void* domain, const char* message) {
  if (domain == NULL) return nvtxRangePushA(message != NULL ? message : "");
  nvtxEventAttributes_t a;
  InitAttributes(&a);
  SetAsciiMessage(&a, message);
  return nvtxDomainRangePushEx((nvtxDomainHandle_t)domain, &a);
}

TELLER_SHIM_API int teller_shim_push_registered(void* domain, void* string_handle) {
  nvtxEventAttributes_t a;
  InitAttributes(&a);
  SetRegisteredMessage(&a, string_handle);
  if (domain == NULL) return nvtxRangePushEx(&a);
  return nvtxDomainRangePushEx((nvtxDomainHandle_t)domain, &a);
}

TELLER_SHIM_API int teller_shim_pop(void* domain) {
  if (domain == NULL) return nvtxRangePop();
  return nvtxDomainRangePop((nvtxDomainHandle_t)domain);
}

TELLER_SHIM_API void teller_shim_mark(void* domain, const char* message) {
  if (domain == NULL) {
    nvtxMarkA(message != NULL ? message : "");
    return;
  }
  nvtxEventAttributes_t a;
  InitAttributes(&a);
  SetAsciiMessage(&a, message);
  nvtxDomainMarkEx((nvtxDomainHandle_t)domain, &a);
}

/* Start/end ranges are not tied to a thread: the Python side uses them for coroutines,
 * whose body may interleave with others on one thread across awaits. */
TELLER_SHIM_API uint64_t teller_shim_range_start(void* domain, const char* message) {
  if (domain == NULL) return nvtxRangeStartA(message != NULL ? message : "");
  nvtxEventAttributes_t a;
  InitAttributes(&a);
  SetAsciiMessage(&a, message);
  return nvtxDomainRangeStartEx((nvtxDomainHandle_t)domain, &a);
}

TELLER_SHIM_API void teller_shim_range_end(void* domain, uint64_t id) {
  if (domain == NULL) {
    nvtxRangeEnd(id);
    return;
  }
  nvtxDomainRangeEnd((nvtxDomainHandle_t)domain, id);
}
