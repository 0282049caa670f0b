import CountersignCore
import Foundation

/// A FIDO2 security key played in software behind the libfido2 1.12
/// functions the agent looks up (`fido.h`), built with the system
/// compiler into a library the agent loads through
/// `COUNTERSIGN_LIBFIDO2`. It has a fingerprint reader (so no PIN is
/// asked) and makes one ES256 credential, kept in a file so that the
/// agent's next command finds it; an assertion is of that credential
/// only, at its RP ID. Bytes and flags as `SoftwareSecurityKey` writes
/// them; signing by libcrypto 3, its functions declared here so that
/// no headers are needed.
struct SoftwareKeyLibrary {
    let library: URL
    let keyFile: URL

    /// The environment of an agent with this key plugged in.
    var environment: [String: String] { ["COUNTERSIGN_LIBFIDO2": library.path] }

    /// The credential id the key made (base64url).
    func credentialID() throws -> String {
        // struct credential: rp_hash[32], id[64], d[32], counter.
        Base64URL.encode(try Data(contentsOf: keyFile).subdata(in: 32..<96))
    }

    static func build() async throws -> SoftwareKeyLibrary {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/cc") else {
            throw ProcessFailure("/usr/bin/cc is missing: the software security key is built with it")
        }
        let directory = try temporaryDirectory("software-libfido2")
        let source = directory.appendingPathComponent("software-key.c")
        let library = directory.appendingPathComponent("libfido2-software.so")
        let keyFile = directory.appendingPathComponent("credential")
        try Self.source(keyFile: keyFile.path).write(to: source, atomically: true, encoding: .utf8)
        let cc = try RunningProcess(
            "/usr/bin/cc", ["-shared", "-fPIC", "-Wall", "-o", library.path, source.path, "-l:libcrypto.so.3"])
        guard try await cc.exitCode(timeout: .seconds(120)) == 0 else {
            throw ProcessFailure("building the software security key failed:\n\(cc.text)")
        }
        return SoftwareKeyLibrary(library: library, keyFile: keyFile)
    }

    static func source(keyFile: String) -> String {
        #"""
        #include <stdbool.h>
        #include <stddef.h>
        #include <stdint.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>

        /* libcrypto 3 (libssl3), as its headers declare it. */
        void *EC_KEY_new_by_curve_name(int nid);
        int EC_KEY_generate_key(void *key);
        const void *EC_KEY_get0_group(const void *key);
        const void *EC_KEY_get0_public_key(const void *key);
        const void *EC_KEY_get0_private_key(const void *key);
        int EC_KEY_set_private_key(void *key, const void *d);
        int EC_KEY_set_public_key(void *key, const void *point);
        void EC_KEY_free(void *key);
        void *EC_POINT_new(const void *group);
        int EC_POINT_mul(const void *group, void *r, const void *n, const void *q, const void *m, void *ctx);
        void EC_POINT_free(void *point);
        size_t EC_POINT_point2oct(const void *group, const void *point, int form, unsigned char *out,
                                  size_t length, void *ctx);
        void *BN_bin2bn(const unsigned char *in, int length, void *out);
        int BN_bn2binpad(const void *bn, unsigned char *out, int length);
        void BN_free(void *bn);
        int ECDSA_sign(int type, const unsigned char *digest, int length, unsigned char *signature,
                       unsigned int *signature_length, void *key);
        unsigned char *SHA256(const unsigned char *data, size_t length, unsigned char *digest);
        int RAND_bytes(unsigned char *out, int length);

        #define P256 415 /* NID_X9_62_prime256v1 */
        #define UNCOMPRESSED 4 /* POINT_CONVERSION_UNCOMPRESSED */
        #define ES256 (-7)
        #define OPT_TRUE 2 /* FIDO_OPT_TRUE */
        #define OK 0
        #define INVALID_ARGUMENT (-7)
        #define INTERNAL (-9)
        #define NO_CREDENTIALS 0x2E
        #define PATH "/dev/software-security-key"

        static const char *key_file = "\#(keyFile)";

        /* The one credential the key made. */
        struct credential {
            unsigned char rp_hash[32], id[64], d[32];
            uint32_t counter;
        };

        typedef struct { char path[64]; } fido_dev_info_t;
        typedef struct { bool open; } fido_dev_t;
        typedef struct {
            int type, uv;
            char rp[256];
            unsigned char hash[32], id[64], authdata[256];
            size_t hash_length, authdata_length;
        } fido_cred_t;
        typedef struct {
            int uv;
            char rp[256];
            unsigned char hash[32], allowed[64], id[64], authdata[64], signature[80];
            size_t hash_length, allowed_length, authdata_length, count;
            unsigned int signature_length;
        } fido_assert_t;

        static bool save(const struct credential *credential) {
            FILE *file = fopen(key_file, "wb");
            if (!file) return false;
            bool written = fwrite(credential, sizeof *credential, 1, file) == 1;
            return fclose(file) == 0 && written;
        }

        static bool load(struct credential *credential) {
            FILE *file = fopen(key_file, "rb");
            if (!file) return false;
            bool read = fread(credential, sizeof *credential, 1, file) == 1;
            fclose(file);
            return read;
        }

        /* rpIdHash, flags (UP, UV when asked for, and more), signCount: 37 bytes. */
        static size_t header(unsigned char *out, const char *rp, int uv, unsigned char flags, uint32_t counter) {
            SHA256((const unsigned char *)rp, strlen(rp), out);
            out[32] = flags | 0x01 | (uv == OPT_TRUE ? 0x04 : 0);
            out[33] = counter >> 24;
            out[34] = counter >> 16;
            out[35] = counter >> 8;
            out[36] = counter;
            return 37;
        }

        void fido_init(int flags) { (void)flags; }
        const char *fido_strerr(int code) {
            switch (code) {
            case OK: return "FIDO_OK";
            case NO_CREDENTIALS: return "FIDO_ERR_NO_CREDENTIALS";
            case INVALID_ARGUMENT: return "FIDO_ERR_INVALID_ARGUMENT";
            default: return "FIDO_ERR_INTERNAL";
            }
        }

        fido_dev_info_t *fido_dev_info_new(size_t count) { return calloc(count, sizeof(fido_dev_info_t)); }
        int fido_dev_info_manifest(fido_dev_info_t *list, size_t count, size_t *found) {
            *found = 0;
            if (count == 0) return OK;
            snprintf(list[0].path, sizeof list[0].path, "%s", PATH);
            *found = 1;
            return OK;
        }
        const fido_dev_info_t *fido_dev_info_ptr(const fido_dev_info_t *list, size_t index) {
            return &list[index];
        }
        const char *fido_dev_info_path(const fido_dev_info_t *info) { return info->path; }
        const char *fido_dev_info_product_string(const fido_dev_info_t *info) {
            (void)info;
            return "Software Key";
        }
        void fido_dev_info_free(fido_dev_info_t **list, size_t count) {
            (void)count;
            free(*list);
            *list = NULL;
        }

        fido_dev_t *fido_dev_new(void) { return calloc(1, sizeof(fido_dev_t)); }
        int fido_dev_open(fido_dev_t *device, const char *path) {
            device->open = strcmp(path, PATH) == 0;
            return device->open ? OK : INVALID_ARGUMENT;
        }
        int fido_dev_close(fido_dev_t *device) {
            device->open = false;
            return OK;
        }
        void fido_dev_free(fido_dev_t **device) {
            free(*device);
            *device = NULL;
        }
        bool fido_dev_is_fido2(const fido_dev_t *device) { return device->open; }
        bool fido_dev_has_pin(const fido_dev_t *device) { (void)device; return false; }
        bool fido_dev_has_uv(const fido_dev_t *device) { (void)device; return true; }
        int fido_dev_set_timeout(fido_dev_t *device, int milliseconds) {
            (void)device;
            (void)milliseconds;
            return OK;
        }

        fido_cred_t *fido_cred_new(void) { return calloc(1, sizeof(fido_cred_t)); }
        void fido_cred_free(fido_cred_t **credential) {
            free(*credential);
            *credential = NULL;
        }
        int fido_cred_set_type(fido_cred_t *credential, int type) {
            credential->type = type;
            return OK;
        }
        int fido_cred_set_clientdata_hash(fido_cred_t *credential, const unsigned char *hash, size_t length) {
            if (length != 32) return INVALID_ARGUMENT;
            memcpy(credential->hash, hash, 32);
            credential->hash_length = length;
            return OK;
        }
        int fido_cred_set_rp(fido_cred_t *credential, const char *id, const char *name) {
            (void)name;
            snprintf(credential->rp, sizeof credential->rp, "%s", id);
            return OK;
        }
        int fido_cred_set_user(fido_cred_t *credential, const unsigned char *id, size_t length, const char *name,
                               const char *display_name, const char *icon) {
            (void)icon;
            return credential && id && length > 0 && name && display_name ? OK : INVALID_ARGUMENT;
        }
        int fido_cred_set_uv(fido_cred_t *credential, int uv) {
            credential->uv = uv;
            return OK;
        }

        /* An ES256 credential: a new P-256 key and a random 64-byte id. */
        int fido_dev_make_cred(fido_dev_t *device, fido_cred_t *credential, const char *pin) {
            (void)pin;
            if (!device->open || credential->type != ES256 || credential->hash_length != 32 || !credential->rp[0])
                return INVALID_ARGUMENT;
            struct credential made = {.counter = 1};
            unsigned char point[65];
            void *key = EC_KEY_new_by_curve_name(P256);
            bool ok = key && EC_KEY_generate_key(key) && RAND_bytes(made.id, 64) == 1
                      && EC_POINT_point2oct(EC_KEY_get0_group(key), EC_KEY_get0_public_key(key), UNCOMPRESSED,
                                            point, 65, NULL) == 65
                      && BN_bn2binpad(EC_KEY_get0_private_key(key), made.d, 32) == 32;
            EC_KEY_free(key);
            if (!ok) return INTERNAL;
            unsigned char *data = credential->authdata;
            size_t n = header(data, credential->rp, credential->uv, 0x40, made.counter);
            memcpy(made.rp_hash, data, 32);
            memset(data + n, 0xEE, 16); /* AAGUID */
            n += 16;
            data[n++] = 0;
            data[n++] = 64;
            memcpy(data + n, made.id, 64);
            n += 64;
            /* {1: 2, 3: -7, -1: 1, -2: x, -3: y}: EC2, ES256, P-256. */
            static const unsigned char cose[] = {0xA5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20};
            memcpy(data + n, cose, sizeof cose);
            n += sizeof cose;
            memcpy(data + n, point + 1, 32);
            n += 32;
            data[n++] = 0x22;
            data[n++] = 0x58;
            data[n++] = 0x20;
            memcpy(data + n, point + 33, 32);
            n += 32;
            credential->authdata_length = n;
            memcpy(credential->id, made.id, 64);
            return save(&made) ? OK : INTERNAL;
        }
        const unsigned char *fido_cred_id_ptr(const fido_cred_t *credential) {
            return credential->authdata_length ? credential->id : NULL;
        }
        size_t fido_cred_id_len(const fido_cred_t *credential) { return credential->authdata_length ? 64 : 0; }
        const unsigned char *fido_cred_authdata_raw_ptr(const fido_cred_t *credential) {
            return credential->authdata_length ? credential->authdata : NULL;
        }
        size_t fido_cred_authdata_raw_len(const fido_cred_t *credential) { return credential->authdata_length; }

        fido_assert_t *fido_assert_new(void) { return calloc(1, sizeof(fido_assert_t)); }
        void fido_assert_free(fido_assert_t **assertion) {
            free(*assertion);
            *assertion = NULL;
        }
        int fido_assert_set_rp(fido_assert_t *assertion, const char *id) {
            snprintf(assertion->rp, sizeof assertion->rp, "%s", id);
            return OK;
        }
        int fido_assert_set_clientdata_hash(fido_assert_t *assertion, const unsigned char *hash, size_t length) {
            if (length != 32) return INVALID_ARGUMENT;
            memcpy(assertion->hash, hash, 32);
            assertion->hash_length = length;
            return OK;
        }
        int fido_assert_allow_cred(fido_assert_t *assertion, const unsigned char *id, size_t length) {
            if (length == 0 || length > sizeof assertion->allowed) return INVALID_ARGUMENT;
            memcpy(assertion->allowed, id, length);
            assertion->allowed_length = length;
            return OK;
        }
        int fido_assert_set_uv(fido_assert_t *assertion, int uv) {
            assertion->uv = uv;
            return OK;
        }

        /* Signs authenticatorData || clientDataHash with the allowed credential, if it is this key's. */
        int fido_dev_get_assert(fido_dev_t *device, fido_assert_t *assertion, const char *pin) {
            (void)pin;
            if (!device->open || assertion->hash_length != 32 || !assertion->rp[0]) return INVALID_ARGUMENT;
            struct credential kept;
            unsigned char data[37 + 32], digest[32];
            if (!load(&kept)) return NO_CREDENTIALS;
            size_t n = header(data, assertion->rp, assertion->uv, 0, kept.counter + 1);
            if (memcmp(data, kept.rp_hash, 32) || assertion->allowed_length != 64
                || memcmp(assertion->allowed, kept.id, 64))
                return NO_CREDENTIALS;
            kept.counter += 1;
            memcpy(data + n, assertion->hash, 32);
            SHA256(data, n + 32, digest);
            void *key = EC_KEY_new_by_curve_name(P256);
            void *d = BN_bin2bn(kept.d, 32, NULL);
            void *point = key ? EC_POINT_new(EC_KEY_get0_group(key)) : NULL;
            bool ok = key && d && point && EC_KEY_set_private_key(key, d)
                      && EC_POINT_mul(EC_KEY_get0_group(key), point, d, NULL, NULL, NULL)
                      && EC_KEY_set_public_key(key, point)
                      && ECDSA_sign(0, digest, 32, assertion->signature, &assertion->signature_length, key);
            EC_POINT_free(point);
            BN_free(d);
            EC_KEY_free(key);
            if (!ok || !save(&kept)) return INTERNAL;
            /* As libfido2 gives it: a CBOR byte string. */
            assertion->authdata[0] = 0x58;
            assertion->authdata[1] = (unsigned char)n;
            memcpy(assertion->authdata + 2, data, n);
            assertion->authdata_length = n + 2;
            memcpy(assertion->id, kept.id, 64);
            assertion->count = 1;
            return OK;
        }
        size_t fido_assert_count(const fido_assert_t *assertion) { return assertion->count; }
        const unsigned char *fido_assert_authdata_ptr(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? assertion->authdata : NULL;
        }
        size_t fido_assert_authdata_len(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? assertion->authdata_length : 0;
        }
        const unsigned char *fido_assert_sig_ptr(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? assertion->signature : NULL;
        }
        size_t fido_assert_sig_len(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? assertion->signature_length : 0;
        }
        const unsigned char *fido_assert_id_ptr(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? assertion->id : NULL;
        }
        size_t fido_assert_id_len(const fido_assert_t *assertion, size_t index) {
            return index < assertion->count ? 64 : 0;
        }
        """#
    }
}
