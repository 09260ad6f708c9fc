/* The README's loops, compiled and run by run-tests: the datagrams come from kit stream files
   instead of a socket, and the replies are counted instead of sent.
       example_loop SCHEMA.json DATAGRAMS.bin [MORE.bin ...]
   1. "Use": the receive-decode-reply loop over the first file, then ticks with nothing received
      (recv timing out), whose calls of qc_client_reply make keep-alives (wire-format 18).
   2. "Ten lines": the frame loop over every file, on a simulated clock: a datagram a server tick
      (20 Hz) with jitter and a stall (a burst of late views after it), frames at 60 Hz; the
      client replies once a frame, the buffer is reset when the client adopts a new stream, and
      the render clock (advanced by the frame time, pulled gently toward newest - delay) never
      steps back but at the re-sync after a reset. Then idle frames: keep-alives. */
#define QUANTCODEC_IMPLEMENTATION
#include "../quantcodec.h"

static int g_pass, g_fail;
#define CHECK(cond, ...) do { if (cond) g_pass++; else { g_fail++; printf("FAIL: "); printf(__VA_ARGS__); printf("\n"); } } while (0)

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = (char *)malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

/* the datagrams of a kit .bin file (each a u32 little-endian length, then its bytes) */
typedef struct { const uint8_t *p; size_t n; } dgram;
static size_t split(const char *data, size_t len, dgram *out, size_t cap) {
    size_t at = 0, k = 0;
    while (at + 4 <= len && k < cap) {
        size_t n = (size_t)(uint8_t)data[at] | (size_t)(uint8_t)data[at + 1] << 8 | (size_t)(uint8_t)data[at + 2] << 16 |
                   (size_t)(uint8_t)data[at + 3] << 24;
        out[k].p = (const uint8_t *)data + at + 4;
        out[k].n = n;
        k++;
        at += 4 + n;
    }
    return k;
}

/* 1. the "Use" loop */
static void use_loop(const qc_schema *sc, const dgram *dg, size_t nd) {
    qc_client client;
    qc_decoder_config cfg = {0};
    qc_error err;
    int pos, rot, snapshots = 0, replies = 0, refused = 0, idle_replies = 0, tick;
    size_t k;
    cfg.max_bytes = 64u << 20;                  /* 0: the default, 256 MiB */
    if (qc_client_init_config(&client, sc, &cfg, 0x5eed, &err) != 0) {   /* (a game: its own random nonce) */
        CHECK(0, "client: %s", err.message);
        return;
    }
    {
        uint8_t hello_request[QC_REPLY_MAX];    /* a new client's first reply: "connect me" */
        if (qc_client_reply(&client, hello_request) != 0) replies++;     /* send(sock, ...) */
    }
    pos = qc_field_index(sc, "position");
    rot = qc_field_index(sc, "rotation");
    CHECK(pos >= 0 && rot >= 0, "schema %s lacks position or rotation", sc->name);
    if (pos < 0 || rot < 0) { qc_client_free(&client); return; }
    /* the stream's datagrams, then 64 ticks with nothing (recv timed out after a tick) */
    for (k = 0, tick = 0; k < nd || tick < 64; k < nd ? (void)k++ : (void)tick++) {
        uint8_t reply[QC_REPLY_MAX];
        size_t rn;
        if (k < nd) {                           /* a datagram arrived */
            qc_result res;
            int st = qc_client_receive(&client, dg[k].p, dg[k].n, &res);
            if (st == QC_SNAPSHOT) {
                const qc_snapshot *s = res.snapshot;
                size_t i;
                for (i = 0; i < s->n; i++) {
                    const uint64_t *row = s->rows + i * (size_t)sc->nslots;
                    double p[3], q[4];
                    qc_field_values(sc, pos, row, p);
                    qc_field_values(sc, rot, row, q);
                    if (!(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 0.99)) { CHECK(0, "not a unit quaternion"); break; }
                }
                snapshots++;
            } else if (st < 0) {
                refused++;
            }
        }
        rn = qc_client_reply(&client, reply);   /* an ack or a hello request: due, or a keep-alive */
        if (rn) { replies++; if (k >= nd) idle_replies++; }   /* send(sock, reply, rn, 0) */
    }
    qc_client_free(&client);
    /* pose_lossy: the start's hello request, one packet before the hello (another), the hello (an
       ack), each view (an ack); then the 64 idle ticks: keep-alives at the 32nd and the 64th */
    printf("  use: %d snapshots, %d replies (%d of them keep-alives in 64 idle ticks), %d refused\n", snapshots, replies,
           idle_replies, refused);
    CHECK(snapshots > 0 && replies == snapshots + 3 + 2 && idle_replies == 2, "use loop: %d replies for %d snapshots, %d idle",
          replies, snapshots, idle_replies);
}

/* 2. the "Ten lines" frame loop on a simulated clock */
static double jitter(uint32_t *s) { *s = *s * 1664525u + 1013904223u; return (double)(*s >> 8) / 16777216.0; }

static void frame_loop(const qc_schema *sc, const char *name, const dgram *dg, size_t nd) {
    const double tick_hz = 20.0, frame_s = 1.0 / 60.0, delay = 2.0;    /* README: delay 2 at 20 Hz */
    qc_client client;
    qc_interp buffer;
    qc_error err;
    qc_interp_frame frame;
    uint8_t reply[QC_REPLY_MAX];
    double *arrive = (double *)malloc((nd + 1) * sizeof(double)), now = 0.0;
    char *got = (char *)calloc(nd + 1, 1);
    double render = 0.0, last_render = 0.0, old = 0.0, last_old = 0.0, newest_at = 0.0;
    int synced = 0, resets = 0, reset_now = 0, has_render = 0, has_old = 0, frames = 0, drawn = 0, back = 0, old_back = 0;
    int replies = 0, idle_replies = 0, idle_frames = 0, pushes = 0, kept = 0, adopted = 0, f;
    double worst_back = 0.0, old_worst = 0.0;
    uint32_t seed = 12345;
    size_t k, left = nd;
    if (qc_client_init(&client, sc, NULL, 0, 0, 1, &err) != 0 || qc_interp_init(&buffer, sc, 32, 2.0, NULL, &err) != 0) {
        CHECK(0, "%s: %s", name, err.message);
        free(arrive); free(got);
        return;
    }
    /* a datagram a tick, 0-40 ms of jitter; datagrams 40..43 held up by a stall of 150 ms */
    for (k = 0; k < nd; k++) {
        arrive[k] = (double)k / tick_hz + 0.040 * jitter(&seed);
        if (k >= 40 && k < 44) arrive[k] = 40.0 / tick_hz + 0.150 + 0.002 * (double)(k - 40);
    }
    for (f = 0; left > 0 || idle_frames < 200; f++) {     /* one frame; 200 more after the last datagram */
        int idle = left == 0;                             /* (nothing more will arrive) */
        now = (double)f * frame_s;
        frames++;
        idle_frames += idle;
        for (k = 0; k < nd; k++) {                        /* receive what has arrived */
            qc_result res;
            int st;
            if (got[k] || arrive[k] > now) continue;
            got[k] = 1;
            left--;
            st = qc_client_receive(&client, dg[k].p, dg[k].n, &res);
            if (res.adopted) { qc_interp_reset(&buffer); synced = 0; resets++; reset_now = 1; }   /* a new stream */
            if (st == QC_SNAPSHOT) {
                int kp = qc_interp_push(&buffer, res.snapshot);
                pushes++;
                kept += kp == 1;
                newest_at = now;                          /* (the old formula's since_newest, reset at every view) */
            }
            adopted += res.adopted;
        }
        if (qc_client_reply(&client, reply) != 0) {       /* once a frame */
            replies++;
            idle_replies += idle;
        }
        if (buffer.has_newest) {                          /* the README's render clock */
            double target = (double)buffer.newest - delay, rate = 1.0 + 0.1 * (target - render);
            if (!synced || target - render > 8.0) { render = target; synced = 1; }
            else render += frame_s * tick_hz * (rate < 0.0 ? 0.0 : rate > 2.0 ? 2.0 : rate);
            /* the README's formula before: newest - delay + since_newest * tick_hz */
            old = (double)buffer.newest - delay + (now - newest_at) * tick_hz;
            if (has_old && !reset_now && old < last_old) { old_back++; if (last_old - old > old_worst) old_worst = last_old - old; }
            last_old = old;
            has_old = 1;
            if (has_render && !reset_now && render < last_render) {
                back++;
                if (last_render - render > worst_back) worst_back = last_render - render;
            }
            last_render = render;
            has_render = 1;
            reset_now = 0;
            if (qc_interp_sample(&buffer, render, &frame) == 0) drawn++;
        }
    }
    printf("  frames %s: %d frames, %d drawn, %d views pushed (%d kept), %d resets, %d replies (%d keep-alives in 200 idle frames), "
           "the render clock %d steps back (the formula before: %d, up to %.2f ticks)\n",
           name, frames, drawn, pushes, kept, resets, replies, idle_replies, back, old_back, old_worst);
    CHECK(back == 0, "%s: the render clock stepped back %d times (up to %.3f ticks)", name, back, worst_back);
    CHECK(drawn > 0 && resets == adopted && resets >= 1, "%s: %d frames drawn, %d resets for %d streams adopted", name, drawn, resets, adopted);
    /* 200 frames after the last datagram: keep-alives, every 32nd call (6 or 7, as the count
       stood when the last datagram arrived) */
    CHECK(idle_replies == 6 || idle_replies == 7, "%s: %d keep-alives in 200 idle frames", name, idle_replies);
    /* the restart stream: the new streams' views (seq 0.. again) are all kept after the reset
       (without it they were the old stream's ticks, held already, and dropped) */
    if (strstr(name, "restart") != NULL)
        CHECK(resets >= 2 && kept == pushes, "%s: %d of %d views kept over %d streams", name, kept, pushes, resets);
    /* pose_lossy's late views after the stall: the formula before stepped back, the clock does not */
    if (strstr(name, "lossy") != NULL) CHECK(old_back > 0, "%s: the scenario has no late view (the formula before never stepped back)", name);
    qc_interp_free(&buffer);
    qc_client_free(&client);
    free(arrive);
    free(got);
}

int main(int argc, char **argv) {
    size_t json_len;
    char *json_text;
    qc_schema schema;
    qc_error err;
    int a;
    static dgram dg[100000];
    if (argc < 3 || (json_text = slurp(argv[1], &json_len)) == NULL) return 2;
    if (qc_schema_parse(&schema, json_text, json_len, NULL, &err) != 0) {
        fprintf(stderr, "schema: %s\n", err.message);
        return 1;
    }
    for (a = 2; a < argc; a++) {
        size_t dlen, nd;
        char *data = slurp(argv[a], &dlen);
        const char *name = strrchr(argv[a], '/') ? strrchr(argv[a], '/') + 1 : argv[a];
        if (data == NULL) { CHECK(0, "cannot read %s", argv[a]); continue; }
        nd = split(data, dlen, dg, 100000);
        if (a == 2) use_loop(&schema, dg, nd);
        frame_loop(&schema, name, dg, nd);
        free(data);
    }
    qc_schema_free(&schema);
    free(json_text);
    printf("%d passed, %d failed\n", g_pass, g_fail);
    return 0;
}
