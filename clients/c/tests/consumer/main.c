/* A consumer of the installed package (built by tests/consumer/cmake with find_package and by
   tests/consumer/pkgconfig with pkg-config, run by run-tests): decodes a kit stream with the
   session client, pushes every view into an interpolation buffer and samples it, and prints
   "snapshots N refused M samples K".   consumer SCHEMA.json DATAGRAMS.bin */
#include <stdio.h>
#include <stdlib.h>
#include <quantcodec.h>     /* the installed header; the implementation is in libquantcodec */

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
    char *json, *data;
    qc_schema schema;
    qc_error err;
    qc_client client;
    qc_interp buffer;
    int snapshots = 0, refused = 0, samples = 0;
    uint8_t reply[QC_REPLY_MAX];
    if (argc != 3 || (json = slurp(argv[1], &json_len)) == NULL || (data = slurp(argv[2], &dlen)) == NULL) return 2;
    if (qc_schema_parse(&schema, json, json_len, NULL, &err) != 0 ||
        qc_client_init(&client, &schema, NULL, 0, 0, 1, &err) != 0 ||
        qc_interp_init(&buffer, &schema, 32, 2.0, NULL, &err) != 0) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    qc_client_reply(&client, reply);
    while (at + 4 <= dlen) {
        size_t n = (size_t)(uint8_t)data[at] | (size_t)(uint8_t)data[at + 1] << 8 |
                   (size_t)(uint8_t)data[at + 2] << 16 | (size_t)(uint8_t)data[at + 3] << 24;
        qc_result res;
        int st = qc_client_receive(&client, (const uint8_t *)data + at + 4, n, &res);
        at += 4 + n;
        if (res.adopted) qc_interp_reset(&buffer);      /* a new stream: a new timeline */
        if (st == QC_SNAPSHOT) {
            qc_interp_frame frame;
            snapshots++;
            qc_interp_push(&buffer, res.snapshot);
            if (qc_interp_sample(&buffer, (double)buffer.newest - 1.5, &frame) == 0) samples++;
        } else if (st < 0) {
            refused++;
        }
        qc_client_reply(&client, reply);               /* (a game: once a frame, datagram or not) */
    }
    printf("snapshots %d refused %d samples %d\n", snapshots, refused, samples);
    qc_interp_free(&buffer);
    qc_client_free(&client);
    qc_schema_free(&schema);
    free(json);
    free(data);
    return 0;
}
