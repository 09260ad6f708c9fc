/* The README's receive-decode-reply loop, compiled and run by run-tests: the datagrams come from
   a kit stream file instead of a socket, and the replies are counted instead of sent.
       example_loop SCHEMA.json DATAGRAMS.bin                                                  */
#define QUANTCODEC_IMPLEMENTATION
#include "../quantcodec.h"

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

int main(int argc, char **argv) {
    size_t json_len, dlen, at = 0;
    char *json_text, *data;
    qc_schema schema;
    qc_error err;
    qc_client client;
    qc_decoder_config cfg = {0};
    int pos, rot, snapshots = 0, replies = 0, refused = 0;
    if (argc != 3 || (json_text = slurp(argv[1], &json_len)) == NULL || (data = slurp(argv[2], &dlen)) == NULL) return 2;
    if (qc_schema_parse(&schema, json_text, json_len, NULL, &err) != 0) {
        fprintf(stderr, "schema: %s\n", err.message);
        return 1;
    }
    cfg.max_bytes = 64u << 20;                  /* 0: the default, 256 MiB */
    if (qc_client_init_config(&client, &schema, &cfg, 0x5eed, &err) != 0) {   /* (a game: its own random nonce) */
        fprintf(stderr, "client: %s\n", err.message);
        return 1;
    }
    {
        uint8_t hello_request[QC_REPLY_MAX];    /* a new client's first reply: "connect me" */
        if (qc_client_reply(&client, hello_request) != 0) replies++;     /* send(sock, ...) */
    }
    pos = qc_field_index(&schema, "position");
    rot = qc_field_index(&schema, "rotation");
    if (pos < 0 || rot < 0) {                   /* -1: the schema has no such field */
        fprintf(stderr, "schema %s lacks position or rotation\n", schema.name);
        return 1;
    }
    while (at + 4 <= dlen) {
        const uint8_t *buf = (const uint8_t *)data + at + 4;
        size_t n = (size_t)(uint8_t)data[at] | (size_t)(uint8_t)data[at + 1] << 8 | (size_t)(uint8_t)data[at + 2] << 16;
        qc_result res;
        uint8_t reply[QC_REPLY_MAX];
        size_t rn;
        int st;
        at += 4 + n;
        st = qc_client_receive(&client, buf, n, &res);
        if (st == QC_SNAPSHOT) {
            const qc_snapshot *s = res.snapshot;
            size_t i;
            for (i = 0; i < s->n; i++) {
                const uint64_t *row = s->rows + i * (size_t)schema.nslots;
                double p[3], q[4];
                qc_field_values(&schema, pos, row, p);
                qc_field_values(&schema, rot, row, q);
                if (!(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3] > 0.99)) { printf("not a unit quaternion\n"); return 1; }
            }
            snapshots++;
        } else if (st < 0) {
            refused++;
        }
        rn = qc_client_reply(&client, reply);
        if (rn) replies++;                      /* send(sock, reply, rn, 0) */
    }
    qc_client_free(&client);
    qc_schema_free(&schema);
    free(json_text);
    free(data);
    /* pose_lossy: the start's hello request, one packet before the hello (another), the hello (an
       ack), each view (an ack) */
    printf("example: %d snapshots, %d replies, %d refused\n", snapshots, replies, refused);
    printf("%d passed, %d failed\n", snapshots > 0 && replies == snapshots + 3 ? 1 : 0, snapshots > 0 && replies == snapshots + 3 ? 0 : 1);
    return 0;
}
