// The header compiled as C++ (an engine's translation unit): declarations and implementation,
// then a small use of the API. Run: prints "C++: N passed, M failed".
#define QUANTCODEC_IMPLEMENTATION
#include "../quantcodec.h"
#include <cstdio>
#include <cstring>
#include <string>

int main() {
    const std::string js =
        "{\"name\": \"PlayerState\", \"version\": 3, \"fields\": ["
        "{\"name\": \"position\", \"codec\": {\"kind\": \"Vector\", \"codecs\": ["
        "{\"kind\": \"Bounded\", \"min\": -2048.0, \"max\": 2048.0, \"bits\": 18, \"mode\": \"endpoints\"},"
        "{\"kind\": \"Bounded\", \"min\": -64.0, \"max\": 192.0, \"bits\": 14, \"mode\": \"endpoints\"},"
        "{\"kind\": \"Bounded\", \"min\": -2048.0, \"max\": 2048.0, \"bits\": 18, \"mode\": \"endpoints\"}]}},"
        "{\"name\": \"rotation\", \"codec\": {\"kind\": \"Quat\", \"bits\": 9, \"mode\": \"endpoints\"}},"
        "{\"name\": \"velocity\", \"codec\": {\"kind\": \"NearlyZero\", \"threshold\": 0.01, \"inner\": {\"kind\": \"Vector\", \"codecs\": ["
        "{\"kind\": \"PowerCurve\", \"max\": 50.0, \"pow\": 2.0, \"bits\": 10},"
        "{\"kind\": \"PowerCurve\", \"max\": 50.0, \"pow\": 2.0, \"bits\": 10},"
        "{\"kind\": \"PowerCurve\", \"max\": 50.0, \"pow\": 2.0, \"bits\": 10}]}}},"
        "{\"name\": \"yaw\", \"codec\": {\"kind\": \"Angle\", \"bits\": 16, \"signed\": false, \"unit\": \"rad\"}},"
        "{\"name\": \"health\", \"codec\": {\"kind\": \"UInt\", \"bits\": 8}},"
        "{\"name\": \"state\", \"codec\": {\"kind\": \"Enum\", \"labels\": [\"idle\", \"walk\", \"run\", \"jump\"]}},"
        "{\"name\": \"grounded\", \"codec\": {\"kind\": \"Bool\"}}]}";
    qc_schema s;
    qc_error err;
    int pass = 0, fail = 0;
    if (qc_schema_parse(&s, js.data(), js.size(), nullptr, &err) != 0) {
        std::printf("C++: schema: %s\n0 passed, 1 failed\n", err.message);
        return 1;
    }
    (std::strcmp(s.fingerprint, "6835f5f0e12ff134") == 0 ? pass : fail)++;
    // the docs' first golden record: 1f19425400b5290608f0590060a6bb0c9901
    const unsigned char rec[] = {0x1f, 0x19, 0x42, 0x54, 0x00, 0xb5, 0x29, 0x06, 0x08, 0xf0, 0x59, 0x00, 0x60, 0xa6, 0xbb, 0x0c, 0x99, 0x01};
    uint64_t row[16];
    (qc_record_decode(&s, rec, sizeof rec, row, &err) == 0 && row[0] == 137503 && row[3] == 469893514 ? pass : fail)++;
    double pos[3];
    (qc_field_values(&s, qc_field_index(&s, "position"), row, pos) == 0 && pos[0] > 100.4 && pos[0] < 100.6 ? pass : fail)++;
    qc_decoder d;
    qc_decoder_init(&d, &s, nullptr, &err);
    qc_result res;
    (qc_decoder_datagram(&d, rec, sizeof rec, &res) == QC_E_NO_HELLO ? pass : fail)++;
    qc_decoder_free(&d);
    // the session client: its first reply is a hello request (30 bytes; 34 keyed); junk before a
    // hello makes another due
    const uint8_t key[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    for (int keyed = 0; keyed < 2; keyed++) {
        qc_client c;
        uint8_t reply[QC_REPLY_MAX];
        (qc_client_init(&c, &s, keyed ? key : nullptr, keyed ? sizeof key : 0, 0, 42, &err) == 0 ? pass : fail)++;
        (qc_client_reply(&c, reply) == (keyed ? 34u : 30u) && reply[0] == 0x48 ? pass : fail)++;
        (qc_client_receive(&c, rec, sizeof rec, &res) == QC_E_NO_HELLO ? pass : fail)++;
        (qc_client_reply(&c, reply) == (keyed ? 34u : 30u) && reply[0] == 0x48 && qc_client_reply(&c, reply) == 0 ? pass : fail)++;
        qc_client_free(&c);
    }
    qc_schema_free(&s);
    std::printf("C++: %d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
