/* The README's ten-line frame loop is compiled by run-tests inside this function: these lines
   declare what it uses (run-tests appends the README's block and the closing brace). */
#define _DEFAULT_SOURCE
#define QUANTCODEC_IMPLEMENTATION
#include "quantcodec.h"
#include <sys/types.h>
#include <sys/socket.h>
static uint32_t os_random_u32(void) { return 1; }
static void draw(uint64_t id, const double *p, const double *q) { (void)id; (void)p; (void)q; }
void frame_loop(qc_schema schema, int sock, const uint8_t *key, size_t key_len, double delay, double frame_s, double tick_hz, int pos, int rot);
void frame_loop(qc_schema schema, int sock, const uint8_t *key, size_t key_len, double delay, double frame_s, double tick_hz, int pos, int rot) {
    qc_client client; qc_interp buffer; qc_error err; qc_result res; qc_interp_frame frame;
    uint8_t buf[65536], reply[QC_REPLY_MAX]; ssize_t n; size_t rn, i;
    double render = 0.0; int synced = 0;
