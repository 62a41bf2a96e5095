/* qualkit's stand-in for miniaudio.h, used only to build ollama from its Go module
   (scripts/e2e-real.sh). Go module zips leave out vendor/ directories, so llama.cpp's vendored
   miniaudio.h is missing, and Debian 12 has no miniaudio package. This header declares just the
   types and functions that llama.cpp's tools/mtmd/mtmd-helper.cpp uses; every call fails, so
   audio input is unsupported. qualkit serves a text model and never sends audio. */
#ifndef QUALKIT_MINIAUDIO_STUB_H
#define QUALKIT_MINIAUDIO_STUB_H
#include <stddef.h>
#include <stdint.h>
typedef int ma_result;
typedef uint32_t ma_uint32;
typedef uint64_t ma_uint64;
typedef enum { ma_format_unknown = 0, ma_format_f32 = 5 } ma_format;
#define MA_SUCCESS 0
#define MA_ERROR (-1)
typedef struct { ma_format format; ma_uint32 channels; ma_uint32 sampleRate; } ma_decoder_config;
typedef struct { int unused; } ma_decoder;
static inline ma_decoder_config ma_decoder_config_init(ma_format f, ma_uint32 ch, ma_uint32 rate) {
	ma_decoder_config c;
	c.format = f;
	c.channels = ch;
	c.sampleRate = rate;
	return c;
}
static inline ma_result ma_decoder_init_memory(const void *d, size_t n, const ma_decoder_config *c, ma_decoder *dec) {
	(void)d; (void)n; (void)c; (void)dec;
	return MA_ERROR;
}
static inline ma_result ma_decoder_get_length_in_pcm_frames(ma_decoder *dec, ma_uint64 *n) {
	(void)dec;
	*n = 0;
	return MA_ERROR;
}
static inline ma_result ma_decoder_read_pcm_frames(ma_decoder *dec, void *out, ma_uint64 n, ma_uint64 *read) {
	(void)dec; (void)out; (void)n;
	*read = 0;
	return MA_ERROR;
}
static inline ma_result ma_decoder_uninit(ma_decoder *dec) {
	(void)dec;
	return MA_SUCCESS;
}
#endif
