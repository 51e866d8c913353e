/* asan: KV_ASAN is defined when this build runs under AddressSanitizer (GCC
 * says so with __SANITIZE_ADDRESS__, clang with __has_feature), for the code
 * that must step aside for it: custom allocators, address-space limits,
 * mappings its leak checker does not scan. */
#ifndef KV_ASAN_H
#define KV_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define KV_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KV_ASAN 1
#endif
#endif

#endif
