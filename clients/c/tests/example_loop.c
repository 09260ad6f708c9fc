/* The README's receive-decode-ack loop, compiled and run by run-tests: the datagrams come from a
   kit stream file instead of a socket, and the acks go to stdout.
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
    qc_decoder dec;
    qc_decoder_config cfg = {0};
    int pos, rot, snapshots = 0, acks = 0, refused = 0;
    if (argc != 3 || (json_text = slurp(argv[1], &json_len)) == NULL || (data = slurp(argv[2], &dlen)) == NULL) return 2;
    if (qc_schema_parse(&schema, json_text, json_len, NULL, &err) != 0) {
        fprintf(stderr, "schema: %s\n", err.message);
        return 1;
    }
    cfg.max_entities = 4096;
    qc_decoder_init(&dec, &schema, &cfg, &err);
    pos = qc_field_index(&schema, "position");
    rot = qc_field_index(&schema, "rotation");
    while (at + 4 <= dlen) {
        const uint8_t *buf = (const uint8_t *)data + at + 4;
        size_t n = (size_t)(uint8_t)data[at] | (size_t)(uint8_t)data[at + 1] << 8 | (size_t)(uint8_t)data[at + 2] << 16;
        qc_result res;
        int st;
        at += 4 + n;
        st = qc_decoder_datagram(&dec, buf, n, &res);
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
        if (res.ack) {
            uint8_t ack[2];
            ack[0] = (uint8_t)(res.ack_seq & 0xFF);
            ack[1] = (uint8_t)(res.ack_seq >> 8);
            acks++;
            (void)ack;
        }
    }
    qc_decoder_free(&dec);
    qc_schema_free(&schema);
    free(json_text);
    free(data);
    printf("example: %d snapshots, %d acks, %d refused\n", snapshots, acks, refused);
    printf("%d passed, %d failed\n", snapshots > 0 && acks == snapshots ? 1 : 0, snapshots > 0 && acks == snapshots ? 0 : 1);
    return 0;
}
